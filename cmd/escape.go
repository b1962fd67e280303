package cmd

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Queue names, kinds, unique keys, worker identities, lease tokens and a
// command's stderr come from whoever enqueued or ran a job, and end up on
// an admin's terminal: a kind of "evil\x1b[2J" must not clear the screen.
// Everything the CLI prints that it did not write itself goes through
// safe (one field), escapeLine (an error message) or writeJSON.

// printsAsIs reports whether r may reach a terminal as it is. Go's
// strconv.IsPrint leaves out exactly what a terminal or a text renderer
// acts on: C0 and C1 controls, DEL, and format characters such as the
// bidi overrides and isolates (U+202A–U+202E, U+2066–U+2069).
func printsAsIs(r rune) bool { return strconv.IsPrint(r) }

// plain reports whether s can be printed as it is: valid UTF-8, every rune
// printable, and no leading quote, so that a plain field never reads like
// a quoted one.
func plain(s string) bool {
	if !utf8.ValidString(s) || strings.HasPrefix(s, `"`) {
		return false
	}
	for _, r := range s {
		if !printsAsIs(r) {
			return false
		}
	}
	return true
}

// safe is s as it is when that is plain, and otherwise s quoted with Go's
// escapes (%q): "evil\x1b[2J". The common name prints unchanged; a hostile
// one is visible for what it is.
func safe(s string) string {
	if plain(s) {
		return s
	}
	return strconv.Quote(s)
}

// escapeLine escapes, in place and without quotes, every rune of s that
// must not reach a terminal, newlines included: for an error message,
// which must stay one readable line whatever job text it echoes.
func escapeLine(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !printsAsIs(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeJSON rewrites, as \u escapes, the runes of encoded JSON that
// encoding/json leaves raw but a terminal acts on: DEL, C1 controls and
// format characters (encoding/json escapes the C0 controls and replaces
// invalid UTF-8 by itself). Outside strings JSON is ASCII, so every such
// rune is in a string, where a \u escape means the same rune.
func escapeJSON(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = append(out, `\ufffd`...)
		case r < 0x7f || printsAsIs(r):
			out = append(out, b[i:i+size]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// lineBreak is a line break in an error message, with the colon that may
// end the line before it and the indent of the line after it.
var lineBreak = regexp.MustCompile(`(:?)\n[\t ]*`)

// oneLine joins the lines of an error message into one: errors.Join puts
// each error on a line of its own, and pgx a connection error's every
// address on an indented one ("failed to connect to `user=ada
// database=app`: 127.0.0.1:5432: dial error: ...; [::1]:5432: dial
// error: ..."). Every other control character is left to escapeLine.
func oneLine(s string) string {
	return lineBreak.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, ":") {
			return ": "
		}
		return "; "
	})
}

// terminalSafe is an error whose message went through oneLine and
// escapeLine; it still unwraps to the error it escapes.
type terminalSafe struct{ err error }

func (e terminalSafe) Error() string { return escapeLine(oneLine(e.err.Error())) }
func (e terminalSafe) Unwrap() error { return e.err }
