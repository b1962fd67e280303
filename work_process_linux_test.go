package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

func TestSIGKILLedWorkTakesItsCommandsWithIt(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "q.db")
	mustLite(t, db, "", "enqueue", "a")
	mustLite(t, db, "", "enqueue", "b")

	w := startWatched(t, db, "-c", "2", "--", "sh", "-c", fmt.Sprintf(`echo $$ > %s/$LITE_JOB_ID.pid; exec sleep 1000`, dir))
	first := readPid(t, filepath.Join(dir, "1.pid"))
	second := readPid(t, filepath.Join(dir, "2.pid"))
	is.NoErr(w.cmd.Process.Signal(syscall.SIGKILL))
	w.wait(t)
	waitGone(t, "the first command", first)
	waitGone(t, "the second command", second)
}

func TestWorkCommandsGetTheDefaultSIGPIPE(t *testing.T) {
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	// lite handles SIGPIPE itself; its commands must not inherit that as
	// an ignored signal, or `producer | head` in a job never ends.
	mustLite(t, db, "", "work", "--exit-when-empty", "--", "grep", "SigIgn", "/proc/self/status")
	result := showJob(t, db, 1).Result
	ignored, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(result, "SigIgn:")), 16, 64)
	is.NoErr(err)
	is.Equal(ignored&(1<<(syscall.SIGPIPE-1)), uint64(0)) // SIGPIPE is not ignored
}
