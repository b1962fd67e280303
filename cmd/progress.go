package cmd

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows how far enqueue --file is through its input (once
// through to check it, and again to enqueue it), only on a terminal: a bar of the bytes read when the input's size is known (a
// file), a spinner with the bytes read when not (a pipe), each with the
// jobs committed so far. Anywhere else it shows nothing, and the final
// count is the one line enqueue prints.
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress is the progress of reading size bytes (-1: unknown) onto w.
func newProgress(w io.Writer, size int64) *progress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("enqueued 0"),
		progressbar.OptionShowBytes(true),
		progressbar.OptionShowTotalBytes(true),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionClearOnFinish(),
	)}
}

// read moves the bar on by n bytes of input.
func (p *progress) read(n int) {
	if p.bar != nil {
		_ = p.bar.Add(n)
	}
}

// again starts the bar over for the input's second reading, the one that
// enqueues it, after the first has checked every line.
func (p *progress) again() {
	if p.bar != nil {
		p.bar.Reset()
	}
}

// committed shows the jobs committed so far.
func (p *progress) committed(jobs int) {
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("enqueued %d", jobs))
	}
}

// done clears the bar, once, before the final line or an error.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Exit()
		_ = p.bar.Clear()
		p.bar = nil
	}
}
