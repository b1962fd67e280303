package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: the side a program writes to as its
// terminal, and the side that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s, m
}

func TestEnqueueFileOnATerminalShowsAProgressBar(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "x")
	term, reader := openPTY(t)
	cmd := exec.CommandContext(t.Context(), liteBin, "--db", db, "enqueue", "--file", jobsFile(t, 2500))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, term
	is.NoErr(cmd.Start())
	term.Close() // the child holds it now: reading ends once it exits
	shown, _ := io.ReadAll(reader)
	is.NoErr(cmd.Wait())
	is.Equal(out.String(), "enqueued 2500 jobs (0 duplicates skipped)\n") // stdout keeps its one line
	screen := string(shown)
	is.True(strings.Contains(screen, "enqueued 0")) // the bar, with the jobs committed
	is.True(strings.Contains(screen, "% |"))        // and how far through the file
	is.True(strings.Contains(screen, "/56 kB"))     // of its size (56 kB)
	cleared := screen[strings.LastIndex(screen, "]")+1:]
	is.True(strings.Contains(cleared, "\r "))  // the bar is blanked at the end,
	is.Equal(strings.Trim(cleared, " \r"), "") // and nothing follows on stderr
}
