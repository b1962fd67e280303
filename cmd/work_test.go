package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAResultOverTheLimitIsCutAndMarkedWithItsRealSize(t *testing.T) {
	t.Run("three GiB streamed through are counted, not kept", func(t *testing.T) {
		is := is.New(t)
		h := &headWriter{max: 1 << 20}
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range 3 << 10 {
			n, err := h.Write(chunk)
			is.NoErr(err)
			is.Equal(n, len(chunk))
		}
		is.Equal(h.n, int64(3<<30))
		is.Equal(cap(h.b) < 2<<20, true) // only the head is held
		r := h.result()
		is.Equal(len(r), 1<<20) // the mark fits within the limit
		is.True(strings.HasSuffix(string(r), "\n[lite: output truncated: 3221225472 bytes, the first 1048508 kept]\n"))
		is.Equal(strings.Count(string(r), "x"), 1048508) // the mark says what was kept
	})

	t.Run("an output of exactly the limit is kept whole", func(t *testing.T) {
		is := is.New(t)
		h := &headWriter{max: 1024}
		_, _ = h.Write(bytes.Repeat([]byte("y"), 1024))
		is.Equal(string(h.result()), strings.Repeat("y", 1024))
	})
}

func TestParseSizeReadsBytesKiBAndMiB(t *testing.T) {
	is := is.New(t)
	for s, want := range map[string]int{"2048": 2048, "512B": 512, "4KiB": 4096, "3MiB": 3 << 20} {
		n, err := parseSize(s)
		is.NoErr(err)
		is.Equal(n, want)
	}
	for _, s := range []string{"", "1.5MiB", "1MB", "-1", "99999999999999999999", "65MiB x"} {
		_, err := parseSize(s)
		is.True(err != nil) // refused
	}
}
