//go:build unix

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/cmd"
	"github.com/matryer/is"
)

func TestWorkKindLeasesOnlyThoseKinds(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		for _, kind := range []string{"mail", "resize", "report", "mail"} {
			mustLite(t, db, "", "enqueue", "-k", kind, kind)
		}
		r := runLite(t, db, "", "work", "--exit-when-empty", "--kind", "mail", "-k", "report", "--", "cat")
		is.Equal(r.code, 0) // a job of another kind does not keep it from exiting
		is.True(strings.Contains(r.stderr, `kinds=mail,report`))
		var states []string
		for _, j := range listJobs(t, db) {
			states = append(states, j.Kind+":"+j.State)
		}
		is.Equal(states, []string{"mail:done", "resize:available", "report:done", "mail:done"})
		mustLite(t, db, "", "work", "--exit-when-empty", "--", "cat") // no --kind: every kind
		is.Equal(len(listJobs(t, db, "-s", "done")), 4)
	})
}

func TestWorkExitWhenEmptyExitsOnceNothingIsStartableNow(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("jobs due later, waiting out a backoff or in a paused queue do not keep it, and it exits 0", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "-q", "later", "--delay", "1h", "x")
			mustLite(t, db, "", "enqueue", "-q", "failing", "--max-attempts", "5", "x")
			mustLite(t, db, "", "enqueue", "-q", "paused", "x")
			mustLite(t, db, "", "pause", "paused")
			r := runLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", "exit 1")
			is.Equal(r.code, 0) // a failed attempt that will retry is not a death
			is.Equal(len(listJobs(t, db, "-s", "available")), 3)
		})

		t.Run("a job that died during the run makes it exit 3", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "x")
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "y")
			r := runLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", `test "$(cat)" = x`)
			is.Equal(r.code, cmd.ExitDead)
			is.True(strings.Contains(r.stderr, "lite: work: 1 jobs died"))
		})

		t.Run("it says what it works when it starts", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			r := runLite(t, db, "", "work", "--exit-when-empty", "-q", "a=2", "-q", "b", "-c", "3", "--", "true")
			is.Equal(r.code, 0)
			is.True(strings.Contains(r.stderr, `msg="lite: working"`))
			is.True(strings.Contains(r.stderr, `queues="a=2,b=3" slots=5`))
			if e.name == "sqlite" {
				is.True(strings.Contains(r.stderr, filepath.Base(db))) // the file, so that a typo shows
			}
		})

		t.Run("at debug level it logs each job's start and end", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "-k", "mail", "x")
			r := runLite(t, db, "", "--log-level", "debug", "work", "--exit-when-empty", "--", "true")
			is.Equal(r.code, 0)
			is.True(strings.Contains(r.stderr, `msg="lite: job started" id=1 generation=1 queue=default kind=mail state=running`))
			is.True(strings.Contains(r.stderr, `msg="lite: job done" id=1`))
		})
	})
}

func TestWorkKeepsAnOutputOverMaxResultCutAndTheJobDone(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("5 MB on stdout under the default 1MiB ends done with its head and its real size", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--max-attempts", "1", "x")
			r := runLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", "yes | head -c 5000000")
			is.Equal(r.code, 0)
			is.True(strings.Contains(r.stderr, "bytes=5000000 max_result=1048576")) // logged with the real size
			j := showJob(t, db, 1)
			is.Equal(j.State, "done") // the exit status alone decides
			is.Equal(len(j.Result), 1<<20)
			is.True(strings.HasPrefix(j.Result, "y\ny\n"))
			is.True(strings.HasSuffix(j.Result, "\n[lite: output truncated: 5000000 bytes, the first 1048511 kept]\n"))
		})

		t.Run("--max-result sets the limit, above the default too", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "small")
			mustLite(t, db, "", "enqueue", "large")
			mustLite(t, db, "", "work", "--exit-when-empty", "-c", "1", "--max-result", "2MiB", "--",
				"sh", "-c", `if [ "$(cat)" = small ]; then yes | head -c 3000; else yes | head -c 2097152; fi`)
			is.Equal(len(showJob(t, db, 1).Result), 3000)    // under the limit: whole
			is.Equal(len(showJob(t, db, 2).Result), 2097152) // exactly the limit: whole, over the library's default
			r := runLite(t, db, "", "work", "--max-result", "1MB", "--", "true")
			is.Equal(r.code, 2)
			is.True(strings.Contains(r.stderr, "--max-result \"1MB\": give a whole number of bytes with B, KiB or MiB"))
		})
	})
}
