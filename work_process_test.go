//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/liteq/lite/cmd"
	"github.com/matryer/is"
)

// These tests drive `lite work` and the processes of its commands: each
// command writes the pids it wants checked to files, and the tests look
// those processes up after lite is done with them.

// shownJob is a job as `lite --json show` prints it, errors included.
type shownJob struct {
	State    string `json:"state"`
	Result   string `json:"result"`
	Attempts int    `json:"attempts"`
	Errors   []struct {
		Error string `json:"error"`
	} `json:"errors"`
}

func showJob(t *testing.T, db string, id int64) shownJob {
	t.Helper()
	var j shownJob
	out := mustLite(t, db, "", "--json", "show", fmt.Sprint(id))
	if err := json.Unmarshal([]byte(out), &j); err != nil {
		t.Fatalf("show --json: %v: %s", err, out)
	}
	return j
}

// watchedWorker is `lite work` whose end and log the test watches while
// it runs.
type watchedWorker struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once it exited
	err  error         // Wait's, once done is closed
	mu   sync.Mutex
	logs bytes.Buffer
}

// startWatched starts `lite work` on db, its log kept.
func startWatched(t *testing.T, db string, args ...string) *watchedWorker {
	t.Helper()
	w := &watchedWorker{}
	cmd := exec.Command(liteBin, append([]string{"--db", db, "work"}, args...)...)
	cmd.Stderr = &lockedWriter{mu: &w.mu, w: &w.logs}
	return watch(t, w, cmd)
}

// watch starts cmd; it is killed when the test ends.
func watch(t *testing.T, w *watchedWorker, cmd *exec.Cmd) *watchedWorker {
	t.Helper()
	w.cmd, w.done = cmd, make(chan struct{})
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-w.done
	})
	return w
}

func (w *watchedWorker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *watchedWorker) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logs.String()
}

// wait waits for the worker to exit and returns its exit code.
func (w *watchedWorker) wait(t *testing.T) int {
	t.Helper()
	eventually(t, "lite work exits", w.exited)
	var exit *exec.ExitError
	if errors.As(w.err, &exit) {
		return exit.ExitCode()
	}
	if w.err != nil {
		t.Fatal(w.err)
	}
	return 0
}

// readPid waits for a command to write its pid to path; the process is
// killed when the test ends, in case lite left it behind.
func readPid(t *testing.T, path string) int {
	t.Helper()
	var pid int
	eventually(t, "a pid in "+filepath.Base(path), func() bool {
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// gone reports whether the process has ended: no such process, or (on
// Linux) a zombie, dead and waiting for init to reap it.
func gone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold anything, so look after its end.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && bytes.HasPrefix(stat[i+1:], []byte(" Z"))
}

func waitGone(t *testing.T, what string, pid int) {
	t.Helper()
	eventually(t, what+" (pid "+strconv.Itoa(pid)+") is gone", func() bool { return gone(pid) })
}

// stubbornTree is a command whose leader and grandchild both ignore
// SIGTERM; they write their pids to outer.pid and inner.pid in dir.
func stubbornTree(dir string) []string {
	script := fmt.Sprintf(`trap "" TERM
sh -c 'trap "" TERM; exec sleep 1000' &
echo $! > %[1]s/inner.pid
echo $$ > %[1]s/outer.pid
exec sleep 1000`, dir)
	return []string{"sh", "-c", script}
}

func TestWorkEndsTheWholeProcessTree(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("a timed-out command's tree is killed after the grace, even what ignores SIGTERM", func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")

			args := append([]string{"work", "--exit-when-empty", "--timeout", "1s", "--grace", "200ms", "--"}, stubbornTree(dir)...)
			mustLiteExit(t, cmd.ExitDead, db, "", args...)
			waitGone(t, "the leader", readPid(t, filepath.Join(dir, "outer.pid")))
			waitGone(t, "the grandchild", readPid(t, filepath.Join(dir, "inner.pid")))
			j := showJob(t, db, 1)
			is.Equal(j.State, "dead")
			is.True(strings.Contains(j.Errors[0].Error, "timed out"))
		})

		t.Run("at shutdown a tree that ignores SIGTERM is killed after the grace and its job is given back", func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "x")

			w := startWatched(t, db, append([]string{"--grace", "200ms", "--"}, stubbornTree(dir)...)...)
			outer := readPid(t, filepath.Join(dir, "outer.pid"))
			inner := readPid(t, filepath.Join(dir, "inner.pid"))
			is.NoErr(w.cmd.Process.Signal(syscall.SIGTERM))
			is.Equal(w.wait(t), 0) // a graceful stop
			// lite work killed the tree itself: the worker never gave up on it.
			is.True(!strings.Contains(w.log(), "ignored shutdown"))
			waitGone(t, "the leader", outer)
			waitGone(t, "the grandchild", inner)
			j := showJob(t, db, 1)
			is.Equal(j.State, "available")
			is.Equal(j.Attempts, 0) // given back: the attempt is not held against it
			is.Equal(len(j.Errors), 0)
		})

		t.Run("a background child holding stdout does not fail a command that exited 0, and ends with it", func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")

			mustLite(t, db, "", "work", "--exit-when-empty", "--grace", "200ms", "--",
				"sh", "-c", fmt.Sprintf(`sleep 1000 & echo $! > %s/bg.pid; printf started`, dir))
			bg := readPid(t, filepath.Join(dir, "bg.pid"))
			j := showJob(t, db, 1)
			is.Equal(len(j.Errors), 0) // not failed: no "WaitDelay expired"
			is.Equal(j.State, "done")
			is.Equal(j.Result, "started")
			waitGone(t, "the background child", bg)
		})
	})
}

func TestWorkSecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		dir := t.TempDir()
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")

		// A grace far longer than the test may run: only the second signal
		// can end it.
		w := startWatched(t, db, append([]string{"--grace", "1h", "--"}, stubbornTree(dir)...)...)
		outer := readPid(t, filepath.Join(dir, "outer.pid"))
		inner := readPid(t, filepath.Join(dir, "inner.pid"))
		is.NoErr(w.cmd.Process.Signal(syscall.SIGTERM))
		// Two signals sent at once may arrive as one: send the second once
		// the first was seen. Another signal is a second request however
		// soon it comes; the same one would be only a second later.
		eventually(t, "lite work says it is shutting down", func() bool { return strings.Contains(w.log(), "shutting down") })
		is.NoErr(w.cmd.Process.Signal(syscall.SIGINT))

		is.Equal(w.wait(t), 1)
		lines := strings.Split(strings.TrimSpace(w.log()), "\n")
		is.True(strings.Contains(lines[len(lines)-1], "lite: work: stopped at once")) // says why it exited early
		waitGone(t, "the leader", outer)
		waitGone(t, "the grandchild", inner)
		j := showJob(t, db, 1)
		is.Equal(j.State, "available")
		is.Equal(j.Attempts, 0) // given back: the attempt is not held against it
		is.Equal(len(j.Errors), 0)
	})
}

func TestWorkTakesTimeoutsSIGTERMToItAndItsGroupAsOneRequest(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := sqliteCLI.db(t)
	dir := t.TempDir()
	mustLite(t, db, "", "enqueue", "x")
	w := &watchedWorker{}
	// As GNU timeout runs it: lite leads a process group of its own.
	cmd := exec.Command(liteBin, "--db", db, "work", "--grace", "10s", "--",
		"sh", "-c", fmt.Sprintf("touch %s/started; sleep 1; printf finished", dir))
	cmd.Stderr = &lockedWriter{mu: &w.mu, w: &w.logs}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	watch(t, w, cmd)
	eventually(t, "the command runs", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	// timeout's one SIGTERM: to the child, then to the group.
	is.NoErr(syscall.Kill(cmd.Process.Pid, syscall.SIGTERM))
	is.NoErr(syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	is.Equal(w.wait(t), 0) // a graceful stop, not "stopped at once"
	j := showJob(t, db, 1)
	is.Equal(j.State, "done") // the running command had its grace
	is.Equal(j.Result, "finished")
}

func TestWorkSurvivesABrokenLogPipe(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		dir := t.TempDir()
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		started := filepath.Join(dir, "started")
		// The first run waits to be stopped; a later one answers at once.
		script := fmt.Sprintf(`if [ "$LITE_JOB_GENERATION" = 1 ]; then touch %s; exec sleep 1000; fi
printf 'generation %%s' "$LITE_JOB_GENERATION"`, started)

		// Its stderr is a pipe nobody reads any more, as after `2>&1 | head`.
		r, pw, err := os.Pipe()
		is.NoErr(err)
		is.NoErr(r.Close())
		cmd := exec.Command(liteBin, "--db", db, "work", "-c", "1", "--heartbeat", "100ms", "--stale-after", "1s",
			"--grace", "200ms", "--", "sh", "-c", script)
		cmd.Stderr = pw
		w := watch(t, &watchedWorker{}, cmd)
		is.NoErr(pw.Close())
		alive := func() bool {
			if w.exited() {
				t.Fatalf("lite work died: %v", w.err)
			}
			return true
		}

		eventually(t, "the first run starts", func() bool { _, err := os.Stat(started); return alive() && err == nil })
		// The worker warns that it lost the lease: a write to the closed pipe.
		mustLite(t, db, "", "release", "1")
		eventually(t, "the job is done", func() bool { return alive() && showJob(t, db, 1).State == "done" })
		is.NoErr(cmd.Process.Signal(syscall.SIGTERM))
		is.Equal(w.wait(t), 0) // a clean exit, though no log line could be written
	})
}

func TestWorkRefusesACommandItCannotRun(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		dir := t.TempDir()
		notExecutable := filepath.Join(dir, "handler.sh")
		if err := os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name    string
			command string
			want    string
		}{
			{"a path that does not exist", "/nonexistent/cmd", `cannot run "/nonexistent/cmd": no such file or directory`},
			{"a name not on PATH", "no-such-command-for-lite", `cannot run "no-such-command-for-lite": executable file not found in $PATH`},
			{"a file that is not executable", notExecutable, "permission denied"},
		}
		for _, c := range cases {
			t.Run(c.name+" is refused at start-up in one line, and no job is touched", func(t *testing.T) {
				is := is.New(t)
				db := e.db(t)
				mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")
				before := listJobs(t, db)

				r := runLite(t, db, "", "work", "--exit-when-empty", "--", c.command)
				is.Equal(r.code, 2)
				is.True(strings.Contains(r.stderr, c.want))
				is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
				is.Equal(listJobs(t, db), before)          // no attempt burnt

				fresh := e.db(t)
				is.Equal(runLite(t, fresh, "", "work", "--", c.command).code, 2)
				is.True(e.untouched(t, fresh)) // refused before the database is made
			})
		}
	})
}

func TestWorkReportsFailedAttempts(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("a failed attempt is logged with its job, attempt and error", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")
			r := runLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", "echo oops >&2; exit 3")
			is.Equal(r.code, cmd.ExitDead) // its one attempt failed: dead
			is.True(strings.Contains(r.stderr, `msg="lite: job attempt failed" job_id=1 `))
			is.True(strings.Contains(r.stderr, " attempt=1 "))
			is.True(strings.Contains(r.stderr, ` err="exit status 3: oops"`))
		})

		t.Run("an exit status with nothing on stderr is recorded without a trailing colon", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "x")
			mustLiteExit(t, cmd.ExitDead, db, "", "work", "--exit-when-empty", "--", "sh", "-c", "exit 100")
			j := showJob(t, db, 1)
			is.Equal(j.State, "dead")
			is.Equal(j.Errors[0].Error, "exit status 100")
		})
	})
}

func TestWorkRefusesFlagsItWouldIgnore(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		cases := []struct {
			flag []string
			want string
		}{
			{[]string{"-c", "0"}, "--concurrency must be at least 1"},
			{[]string{"--grace", "0s"}, "--grace must be more than 0s"},
			{[]string{"--grace=-1s"}, "--grace must be more than 0s"},
			{[]string{"--heartbeat=-1s"}, "--heartbeat must be more than 0s"},
			{[]string{"--heartbeat", "0s"}, "--heartbeat must be more than 0s"},
			{[]string{"--stale-after=-1s"}, "--stale-after must be more than 0s"},
			{[]string{"--timeout=-1s"}, "--timeout must not be negative"},
			{[]string{"--poll=-1s"}, "--poll must be more than 0s"},
			{[]string{"--poll", "0s"}, "--poll must be more than 0s"},
			{[]string{"--heartbeat", "100us", "--stale-after", "300us"}, "--stale-after must be at least 1ms"},
			{[]string{"--heartbeat", "1h", "--stale-after", "2h"}, "under three heartbeats of --heartbeat"},
			{[]string{"--queue", "=3"}, `--queue "=3" names no queue`},
			{[]string{"-q", ""}, `--queue "" names no queue`}, // an unset shell variable must not mean every queue
			{[]string{"--queue", "a=0"}, `--queue "a=0": N must be at least 1, not 0`},
			{[]string{"--queue", "a=x"}, `--queue "a=x": N must be a whole number`},
			{[]string{"-q", "a", "-q", "a=2"}, `--queue "a" is given twice`},
		}
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		before := listJobs(t, db)
		for _, c := range cases {
			t.Run(strings.Join(c.flag, " ")+" is refused with a usage error", func(t *testing.T) {
				is := is.New(t)
				r := runLite(t, db, "", append(append([]string{"work", "--exit-when-empty"}, c.flag...), "--", "true")...)
				is.Equal(r.code, 2)
				is.True(strings.Contains(r.stderr, c.want))
				is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
				is.Equal(listJobs(t, db), before)          // nothing ran
				fresh := e.db(t)
				r = runLite(t, fresh, "", append(append([]string{"work"}, c.flag...), "--", "true")...)
				is.Equal(r.code, 2)
				is.True(e.untouched(t, fresh)) // refused before any database is made
			})
		}
	})
}

func TestWorkServesTheQueuesGivenAndExitsWhenTheyAreEmpty(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		for _, queue := range []string{"a", "a", "b", "b", "c"} {
			mustLite(t, db, "", "enqueue", "--queue", queue, "x")
		}
		mustLite(t, db, "", "work", "--exit-when-empty", "-q", "a=1", "-q", "b", "--", "true")
		state := map[string][]string{}
		for _, j := range listJobs(t, db) {
			state[j.Queue] = append(state[j.Queue], j.State)
		}
		is.Equal(state, map[string][]string{"a": {"done", "done"}, "b": {"done", "done"}, "c": {"available"}})
	})
}

func TestWorkStopsGracefullyOnSIGHUP(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		w := startWatched(t, db, "--grace", "200ms", "--", "sleep", "100")
		eventually(t, "the job runs", func() bool { return showJob(t, db, 1).State == "running" })
		is.NoErr(w.cmd.Process.Signal(syscall.SIGHUP)) // the terminal or ssh session closed
		is.Equal(w.wait(t), 0)
		j := showJob(t, db, 1)
		is.Equal(j.State, "available") // given back, not left leased
		is.Equal(j.Attempts, 0)
	})
}
