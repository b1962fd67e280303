package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// exitCode waits for cmd and returns its exit code.
func exitCode(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	err := cmd.Wait()
	if exit, ok := err.(*exec.ExitError); ok {
		return exit.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestEnqueueWaitPrintsTheResultOfAWorkProcess(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		// The command echoes its payload: the result is the payload's bytes.
		startWorker(t, db, nil, "--", "cat")
		t.Run("a done job's result comes raw on stdout, exit 0", func(t *testing.T) {
			is := is.New(t)
			payload := "two\nlines \x1b[2J and a tab\t"
			r := runLite(t, db, payload, "enqueue", "--wait", "-")
			is.Equal(r.code, 0)
			is.Equal(r.stdout, payload) // as stored, not escaped: a script pipes it on
			// why: the worker and this enqueue race to create the file, and the one that does says so
			is.Equal(strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n"), "")
		})
		t.Run("with --json it prints the finished job", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "--json", "enqueue", "--wait", "--timeout", "1m", "hello")
			is.Equal(r.code, 0)
			is.True(strings.Contains(r.stdout, `"state": "done"`))
			is.True(strings.Contains(r.stdout, `"result": "hello"`))
		})
	})
}

func TestWaitExitCodes(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		startWorker(t, db, nil, "-q", "work", "--", "sh", "-c",
			`if [ "$(cat)" = die ]; then printf 'bad \033[2J news' >&2; exit 100; fi; printf ok`)
		t.Run("a dead job exits 3 with its error escaped on stderr", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "enqueue", "-q", "work", "--wait", "die")
			is.Equal(r.code, 3)
			is.Equal(r.stdout, "")
			is.True(strings.Contains(r.stderr, "dead after 1 of 10 attempts: "))
			is.True(strings.Contains(r.stderr, `bad \x1b[2J news`))
			is.True(!strings.Contains(r.stderr, "\x1b")) // never raw on a terminal
		})
		t.Run("a cancelled job exits 4", func(t *testing.T) {
			is := is.New(t)
			id := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "idle", "x"))
			var out, errOut bytes.Buffer
			waiting := startLite(t, db, &out, &errOut, "wait", id)
			mustLite(t, db, "", "cancel", id)
			is.Equal(exitCode(t, waiting), 4)
			is.Equal(errOut.String(), "lite: job "+id+" cancelled\n")
		})
		t.Run("a wait that times out exits 5 and leaves the job", func(t *testing.T) {
			is := is.New(t)
			id := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "idle", "x"))
			r := runLite(t, db, "", "wait", "--timeout", "200ms", id)
			is.Equal(r.code, 5)
			is.Equal(r.stderr, "lite: wait: timed out after 200ms; the jobs go on\n")
			is.True(strings.Contains(mustLite(t, db, "", "--json", "show", id), `"state": "available"`))
		})
		t.Run("a job that does not exist exits 2 at once", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "wait", "999")
			is.Equal(r.code, 2)
			is.Equal(r.stderr, "lite: wait: job 999: job not found\n")
		})
		t.Run("several jobs print the done ones' results and exit with the worst end", func(t *testing.T) {
			is := is.New(t)
			a := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "work", "fine"))
			b := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "work", "die"))
			r := runLite(t, db, "", "wait", a, b, a)
			is.Equal(r.code, 3)
			is.Equal(r.stdout, "okok") // each done job's result, in the order given
			is.True(strings.Contains(r.stderr, "job "+b+" dead"))
		})
		t.Run("result prints a done job's result and refuses an unfinished one", func(t *testing.T) {
			is := is.New(t)
			done := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "work", "fine"))
			is.Equal(mustLite(t, db, "", "wait", done), "ok")
			is.Equal(mustLite(t, db, "", "result", done), "ok")
			id := strings.TrimSpace(mustLite(t, db, "", "enqueue", "-q", "idle", "x"))
			r := runLite(t, db, "", "result", id)
			is.Equal(r.code, 5)
			is.Equal(r.stderr, "lite: result job "+id+": it is available, not finished yet\n")
			is.Equal(runLite(t, db, "", "result", "999").code, 2)
		})
		t.Run("the exit codes are in --help", func(t *testing.T) {
			is := is.New(t)
			for _, command := range []string{"wait", "result"} {
				help := mustLite(t, db, "", command, "--help")
				is.True(strings.Contains(help, "3 dead, 4 cancelled, 5 timed out"))
			}
			is.True(strings.Contains(mustLite(t, db, "", "enqueue", "--help"), "--wait"))
		})
		t.Run("wait flags that cannot apply are usage errors", func(t *testing.T) {
			is := is.New(t)
			is.Equal(runLite(t, db, "", "enqueue", "--timeout", "1s", "x").code, 2)
			is.Equal(runLite(t, db, "", "enqueue", "--wait", "--file", "-").code, 2)
			is.Equal(runLite(t, db, "", "wait", "--timeout", "-1s", "1").code, 2)
		})
	})
}

func TestEnqueueWaitOutlivesASIGKILLedWorker(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		// The first run hangs; the run after a reclaim prints its generation.
		handler := []string{"--heartbeat", "100ms", "--stale-after", "500ms", "--", "sh", "-c",
			`[ "$LITE_JOB_GENERATION" = 1 ] && sleep 60; printf 'generation %s' "$LITE_JOB_GENERATION"`}
		victim := startWorker(t, db, nil, handler...)
		var out, errOut bytes.Buffer
		waiting := startLite(t, db, &out, &errOut, "enqueue", "--wait", "x")
		eventually(t, "the victim runs the job", func() bool {
			r := runLite(t, db, "", "--json", "ls", "--state", "running") // fails until the file exists
			return r.code == 0 && strings.Contains(r.stdout, fmt.Sprintf(":%d:", victim.Process.Pid))
		})
		startWorker(t, db, nil, handler...)
		is.NoErr(victim.Process.Signal(syscall.SIGKILL)) // mid-job
		victim.Wait()
		is.Equal(exitCode(t, waiting), 0)
		is.Equal(strings.TrimPrefix(errOut.String(), "lite: created new database "+db+"\n"), "") // why: it may have made the file
		final := listJobs(t, db)[0]
		is.True(final.Generation > 1)
		is.Equal(out.String(), fmt.Sprintf("generation %d", final.Generation)) // the reclaimed run's result
	})
}
