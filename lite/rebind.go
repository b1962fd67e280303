package lite

import (
	"strconv"
	"strings"
)

// Engine names the database the queue runs on: "sqlite" or "postgres".
// A program that keeps its own tables beside lite's (see DB) reads it to
// create them in the engine's own words: an id is `integer primary key`
// on SQLite (a rowid, never reused with autoincrement) and `bigint
// generated always as identity primary key` on PostgreSQL, where
// `integer` is 32 bits. Every other integer column is best declared
// `bigint`, which both engines take and which is 64 bits on both.
func (q *Queue) Engine() string { return q.engine.String() }

// Rebind rewrites query, written with SQLite's placeholders (? and ?N),
// for the queue's engine, so that a program's own SQL through DB or a
// *sql.Tx is written once for both: on PostgreSQL the n-th ? becomes $n
// and ?N becomes $N, as SQLite numbers them (a bare ? takes the number
// after the largest one before it); on SQLite query is returned as it
// is. A ? inside a string literal (PostgreSQL's E'…' and $tag$…$tag$
// too), a quoted name or a comment is left alone. Both drivers also take $N as it is, so a query written with $N
// needs no Rebind; one that uses PostgreSQL's jsonb operators ?, ?| and
// ?& must be written that way.
func (q *Queue) Rebind(query string) string {
	if !q.engine.onServer() || !strings.Contains(query, "?") {
		return query
	}
	return dollarPlaceholders(query)
}

// dollarPlaceholders turns ? and ?N outside literals, quoted names and
// comments into $N.
func dollarPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 8)
	largest := 0
	for i := 0; i < len(query); {
		if end := quotedEnd(query, i); end > i {
			b.WriteString(query[i:end])
			i = end
			continue
		}
		if query[i] != '?' {
			b.WriteByte(query[i])
			i++
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		n := largest + 1
		if j > i+1 {
			n, _ = strconv.Atoi(query[i+1 : j])
		}
		largest = max(largest, n)
		b.WriteString("$" + strconv.Itoa(n))
		i = j
	}
	return b.String()
}

// quotedEnd is the index just past the string literal, quoted name or
// comment that starts at i, or i when none starts there; one left open
// runs to the end. A doubled quote inside a literal reads as two literals
// in a row, which copies the same text. PostgreSQL's own literals are
// read too, since the rewritten query is for it: E'…' (where \' is no
// end) and $tag$…$tag$ bodies.
func quotedEnd(query string, i int) int {
	inName := i > 0 && identByte(query[i-1]) // the E of some'…' or the $ of a$b$ is a name's
	var opener, closer string
	switch {
	case query[i] == '\'':
		opener, closer = "'", "'"
	case query[i] == '"':
		opener, closer = `"`, `"`
	case strings.HasPrefix(query[i:], "--"):
		opener, closer = "--", "\n"
	case strings.HasPrefix(query[i:], "/*"):
		opener, closer = "/*", "*/"
	case (query[i] == 'e' || query[i] == 'E') && !inName && strings.HasPrefix(query[i+1:], "'"):
		return escapedEnd(query, i+2)
	case query[i] == '$' && !inName:
		tag := dollarTag(query[i:])
		if tag == "" {
			return i
		}
		opener, closer = tag, tag
	default:
		return i
	}
	start := i + len(opener)
	end := strings.Index(query[start:], closer)
	if end < 0 {
		return len(query)
	}
	return start + end + len(closer)
}

// escapedEnd is the index just past the E'…' literal whose text starts
// at i, where a backslash escapes the byte after it.
func escapedEnd(query string, i int) int {
	for ; i < len(query); i++ {
		switch {
		case query[i] == '\\':
			i++
		case query[i] == '\'' && strings.HasPrefix(query[i+1:], "'"):
			i++
		case query[i] == '\'':
			return i + 1
		}
	}
	return len(query)
}

// dollarTag is the $tag$ (or $$) that opens a dollar-quoted body at the
// start of s, or "" when none does ($1 is a placeholder: a tag never
// starts with a digit).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		switch {
		case s[j] == '$':
			return s[:j+1]
		case !identByte(s[j]) || (j == 1 && s[j] >= '0' && s[j] <= '9'):
			return ""
		}
	}
	return ""
}

// identByte reports whether b may be part of a name (ASCII letters,
// digits, _ and $; bytes of UTF-8 letters count too).
func identByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || (b >= '0' && b <= '9') || (b|0x20 >= 'a' && b|0x20 <= 'z')
}
