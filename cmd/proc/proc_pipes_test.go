//go:build unix

package proc

import (
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"
)

// stalledWriter holds its first Write until release is closed: a copy
// that has not been scheduled yet when Finish's wait passes, as on a
// loaded machine or in a lite work stopped by SIGSTOP.
type stalledWriter struct {
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	n       int
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += len(p)
	return len(p), nil
}

func TestFinishKeepsTheOutputAFinishedCommandLeftInThePipe(t *testing.T) {
	is := is.New(t)
	// Less than a pipe holds, so the command writes it all and exits; the
	// copy's first read takes at most 32 KiB and the rest waits in the pipe.
	const size = 60_000
	cmd := exec.Command("head", "-c", "60000", "/dev/zero")
	stdout := &stalledWriter{release: make(chan struct{})}
	p, err := AttachPipes(cmd, nil, stdout, &Buffer{})
	is.NoErr(err)
	tree, err := StartTree(cmd)
	p.Started()
	is.NoErr(err)
	_, err = tree.Wait(Stops{Ctx: t.Context()})
	is.NoErr(err) // the command exited by itself, its output in the pipe
	// The copy stays stalled until well after Finish's wait has passed.
	stall := time.AfterFunc(200*time.Millisecond, func() { close(stdout.release) })
	defer stall.Stop()
	p.Finish(time.Millisecond)
	is.Equal(stdout.n, size) // every byte the command wrote before it exited
}

func TestFinishReturnsWhenAProcessThatLeftTheTreeHoldsThePipe(t *testing.T) {
	is := is.New(t)
	// The setsid child leaves the tree's group, so the tree's kill misses
	// it, and it holds stdout open for seconds after the leader exited.
	// The leader exits only once the child has left.
	moved := filepath.Join(t.TempDir(), "moved")
	cmd := exec.Command("sh", "-c", `printf out; setsid sh -c 'touch "$0"; exec sleep 3' "$1" & `+
		`while [ ! -e "$1" ]; do sleep 0.01; done`, "sh", moved)
	var stdout Buffer
	p, err := AttachPipes(cmd, nil, &stdout, &Buffer{})
	is.NoErr(err)
	tree, err := StartTree(cmd)
	p.Started()
	is.NoErr(err)
	_, err = tree.Wait(Stops{Ctx: t.Context()})
	is.NoErr(err)
	began := time.Now()
	p.Finish(50 * time.Millisecond)
	is.True(time.Since(began) < 2*time.Second) // not until the child lets go
	is.Equal(stdout.String(), "out")
}
