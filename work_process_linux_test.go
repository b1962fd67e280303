package main

import (
	"fmt"
	"path/filepath"
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
