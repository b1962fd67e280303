package web

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Every job field comes from whoever enqueued or ran the job. html/template
// escapes what HTML would act on; these also make visible what a browser
// would hide or a copy-paste would carry to a terminal: control and format
// characters (terminal escapes, bidi overrides) and invalid UTF-8 show as
// Go escapes, \x1b[2J rather than nothing.

// field is s fit to show on one line.
func field(s string) string { return escape(s, false) }

// block is s fit to show in a <pre>, keeping its newlines and tabs.
func block(s string) string { return escape(s, true) }

func escape(s string, multiline bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i]), 16))
		case multiline && (r == '\n' || r == '\t'):
			b.WriteRune(r)
		case !strconv.IsPrint(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// content is a payload or result fit to show: indented when it is JSON
// (which says so, for the label), as text otherwise.
func content(raw []byte) (text string, isJSON bool) {
	var out bytes.Buffer
	if json.Valid(raw) && json.Indent(&out, raw, "", "  ") == nil {
		return block(out.String()), true
	}
	return block(string(raw)), false
}
