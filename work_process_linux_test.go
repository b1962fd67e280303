package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

func TestSIGKILLedWorkTakesItsCommandsWithIt(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// A bench SIGKILLed while its latency child enqueues takes the child
// with it, rather than leaving it writing into a directory that no one
// will remove.
func TestSIGKILLedBenchTakesItsChildWithIt(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the bench's first figures")
	}
	is := is.New(t)
	dir := t.TempDir()
	// The child enqueues a job every 20 ms: 500 of them outlast the test.
	bench := exec.Command(liteBin, "bench", "--dir", dir, "--sync", "normal", "--duration", "50ms",
		"--samples", "500", "--big-rows", "0", "--prefill", "20000")
	is.NoErr(bench.Start())
	t.Cleanup(func() { bench.Process.Kill(); bench.Wait() })
	var child int
	eventually(t, "the bench starts a child", func() bool {
		child = childOf(t, bench.Process.Pid)
		return child != 0
	})
	is.NoErr(bench.Process.Signal(syscall.SIGKILL))
	bench.Wait()
	waitGone(t, "the bench's child", child)
	// Left alone, the child would have ended only after its 500 jobs.
	files, err := filepath.Glob(filepath.Join(dir, "lite-bench-*", "run-1", "normal", "latency.db"))
	is.NoErr(err)
	is.Equal(len(files), 1)
	db, err := sql.Open("sqlite", files[0])
	is.NoErr(err)
	defer db.Close()
	var jobs int
	is.NoErr(db.QueryRow("select count(*) from lite_jobs").Scan(&jobs))
	is.True(jobs < 500+500) // the bench's own 500, and fewer of the child's
}

// childOf is the pid of a live child of parent, or 0 if it has none.
func childOf(t *testing.T, parent int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range stats {
		stat, err := os.ReadFile(path)
		if err != nil {
			continue // the process ended while the list was read
		}
		// pid (comm) state ppid ...: comm may hold anything, so read after
		// its end.
		fields := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
		if len(fields) > 1 && string(fields[0]) != "Z" && string(fields[1]) == strconv.Itoa(parent) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(path)))
			return pid
		}
	}
	return 0
}
