package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/matryer/is"
)

// rawRune is the first rune of s that a terminal could act on, or -1.
func rawRune(s string) rune {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return r
		case r == '\n':
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r
		}
		i += size
	}
	return -1
}

// FuzzEscaping checks the three ways the CLI prints untrusted text on any
// string: nothing raw reaches the terminal, and nothing is lost.
func FuzzEscaping(f *testing.F) {
	for _, seed := range []string{"mail", "", `"quoted"`, "evil\x1b[2J\x1b]0;pwned\a", "k\u009b31m", "r\u202et\u2066x",
		"del\x7f", "bad\xff\xfe", "a\nb\r\n", "邮件 müll ✉️ 👩‍💻", "\U0001d11e\u00ad", "nul\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		field := safe(s)
		if r := rawRune(field); r != -1 {
			t.Fatalf("safe(%q) = %q: raw %U", s, field, r)
		}
		if field != s {
			back, err := strconv.Unquote(field)
			if err != nil || back != s {
				t.Fatalf("safe(%q) = %q does not unquote to it: %q, %v", s, field, back, err)
			}
		}
		if line := escapeLine(s); rawRune(line) != -1 || strings.Contains(line, "\n") {
			t.Fatalf("escapeLine(%q) = %q is not one safe line", s, line)
		}
		if line := (terminalSafe{errors.New(s)}).Error(); rawRune(line) != -1 || strings.Contains(line, "\n") {
			t.Fatalf("an error %q prints as %q, not one safe line", s, line)
		}
		var b bytes.Buffer
		if err := writeJSON(&b, map[string]string{"s": s}); err != nil {
			t.Fatal(err)
		}
		if r := rawRune(b.String()); r != -1 {
			t.Fatalf("writeJSON(%q) = %q: raw %U", s, b.String(), r)
		}
		var back map[string]string
		// why: JSON holds UTF-8 only; each invalid byte becomes U+FFFD, as
		// converting to runes does.
		if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["s"] != string([]rune(s)) {
			t.Fatalf("writeJSON(%q) = %q decodes to %q, %v", s, b.String(), back["s"], err)
		}
	})
}

func TestAnErrorOnIndentedLinesPrintsOnOneReadableLine(t *testing.T) {
	t.Run("a connection error of pgx joins its addresses with semicolons", func(t *testing.T) {
		is := is.New(t)
		err := errors.New("open: failed to connect to `user=ada database=app`:\n\t127.0.0.1:1 (127.0.0.1): dial error: connection refused\n\t127.0.0.1:2 (127.0.0.1): dial error: connection refused")
		is.Equal(terminalSafe{err}.Error(), "open: failed to connect to `user=ada database=app`: 127.0.0.1:1 (127.0.0.1): dial error: connection refused; 127.0.0.1:2 (127.0.0.1): dial error: connection refused")
	})
	t.Run("joined errors read as one line, other control characters still escaped", func(t *testing.T) {
		is := is.New(t)
		err := errors.Join(errors.New("kind evil\x1b[2J"), errors.New("next:\n\t\x07"))
		is.Equal(terminalSafe{err}.Error(), `kind evil\x1b[2J; next: \a`)
	})
}
