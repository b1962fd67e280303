package cmd

import (
	"fmt"
	"io"
	"os"
)

// progress prints a count that rewrites itself, only on a terminal.
type progress struct {
	w     io.Writer
	shown bool
}

func newProgress(w io.Writer) *progress {
	if f, ok := w.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			return &progress{w: w}
		}
	}
	return &progress{}
}

func (p *progress) show(n int) {
	if p.w != nil {
		fmt.Fprintf(p.w, "\renqueued %d…", n)
		p.shown = true
	}
}

// done clears the count, once, before the final line or an error.
func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
