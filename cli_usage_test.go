package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/cmd"
	"github.com/matryer/is"
)

func TestANewFileIsNamedWhenACommandCreatesIt(t *testing.T) {
	t.Parallel()
	t.Run("work on a path that does not exist says it created it", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "typo.db")
		r := runLite(t, db, "", "work", "--exit-when-empty", "--", "true")
		is.Equal(r.code, 0)
		is.True(strings.HasPrefix(r.stderr, "lite: created new database "+db+"\n"))
	})
	t.Run("enqueue says so once, on the call that created it", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "new.db")
		is.Equal(runLite(t, db, "", "enqueue", "x").stderr, "lite: created new database "+db+"\n")
		is.Equal(runLite(t, db, "", "enqueue", "x").stderr, "") // the file is there now
	})
	t.Run("a command that only reads refuses a missing file and makes none", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "typo.db")
		for _, args := range [][]string{{"ls"}, {"stats"}, {"show", "1"}, {"workers"}, {"limit", "q"}, {"schedule", "ls"},
			{"retention"}, {"batch", "1"}, {"result", "1"}, {"wait", "1"}} {
			r := runLite(t, db, "", args...)
			is.Equal(r.code, 1)
			is.Equal(r.stderr, "lite: open "+db+": no such file or directory: this command reads a database and creates none (check --db or LITE_DB)\n")
		}
		_, err := os.Stat(db)
		is.True(os.IsNotExist(err))
	})
}

func TestLsIntoAReaderThatStopsEndsNormally(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	var jobs strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&jobs, "{\"payload\": \"%d\"}\n", i)
	}
	mustLite(t, db, jobs.String(), "enqueue", "--file", "-")
	// lite ls -n 10000 | head -1: the reader reads one line and closes the pipe.
	cmd := exec.CommandContext(t.Context(), liteBin, "--db", db, "ls", "-n", "10000")
	out, err := cmd.StdoutPipe()
	is.NoErr(err)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	is.NoErr(cmd.Start())
	line := make([]byte, 10)
	_, err = out.Read(line)
	is.NoErr(err)
	is.NoErr(out.Close())
	is.NoErr(cmd.Wait())          // exit 0
	is.Equal(errOut.String(), "") // and no "broken pipe"
}

func TestLsKeepsEveryStateGiven(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "--max-attempts", "1", "dead")
	mustLiteExit(t, cmd.ExitDead, db, "", "work", "--exit-when-empty", "--", "false")
	mustLite(t, db, "", "enqueue", "done")
	mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
	mustLite(t, db, "", "enqueue", "waiting")
	states := func(args ...string) []string {
		var got []string
		for _, j := range listJobs(t, db, args...) {
			got = append(got, j.State)
		}
		return got
	}
	is.Equal(states("-s", "dead", "-s", "done"), []string{"dead", "done"})
	is.Equal(states("-s", "done,available"), []string{"done", "available"})
	is.Equal(states("-s", "done", "-s", "done"), []string{"done"})
	is.Equal(len(listJobs(t, db, "-s", "dead", "-s", "done", "-n", "1")), 1) // the limit holds across states
	is.Equal(runLite(t, db, "", "ls", "-s", "dead", "-s", "gone").code, 2)
}

func TestDemoRefusesAServerURL(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), liteBin, "--db", "postgres://ada:secret@db.internal/app", "demo")
	cmd.Dir = dir
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	exit, ok := err.(*exec.ExitError)
	is.True(ok)
	is.Equal(exit.ExitCode(), 2)
	is.Equal(errOut.String(), "lite: demo runs on a SQLite file of its own (--file), not on the server that --db or LITE_DB names (postgres://ada:xxxxx@db.internal/app)\n")
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 0) // no demo file made
}

func TestLimitRefusesAPeriodItCannotStoreExactly(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	r := runLite(t, db, "", "limit", "q", "--rate", "5/1500us")
	is.Equal(r.code, 2)
	is.Equal(r.stderr, "lite: --rate: rate \"5/1500us\": the period is not a whole number of milliseconds, the finest time lite stores\n")
	_, err := os.Stat(db)
	is.True(os.IsNotExist(err)) // refused before the file was made
	is.True(strings.Contains(mustLite(t, db, "", "limit", "q", "--rate", "5/1500ms"), "5 starts per 1.5s"))
}

func TestPurgeRefusesAnEmptyState(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "x")
	r := runLite(t, db, "", "purge", "--state", "", "--older-than", "1h")
	is.Equal(r.code, 2)
	is.Equal(r.stderr, "lite: purge: --state is empty: give done, dead or cancelled\n")
	is.Equal(r.stdout, "") // not "purged 0 jobs"
}

func TestDurationFlagsTakeDays(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "x")
	mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
	is.Equal(mustLite(t, db, "", "purge", "--state", "done", "--older-than", "7d"), "purged 0 jobs\n") // done just now
	is.Equal(mustLite(t, db, "", "delete", "--state", "done", "--older-than", "1d12h", "--dry-run"), "would delete 0 jobs (dry run: nothing changed)\n")
	before := time.Now()
	mustLite(t, db, "", "enqueue", "--delay", "2d", "later")
	var jobs []struct {
		RunAt time.Time `json:"run_at"`
	}
	is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "ls", "-s", "available")), &jobs))
	is.Equal(len(jobs), 1)
	is.True(jobs[0].RunAt.Sub(before) >= 48*time.Hour && jobs[0].RunAt.Sub(before) < 49*time.Hour) // two days of 24 hours
	is.True(strings.Contains(mustLite(t, db, "", "limit", "q", "--rate", "100/1d"), "100 starts per 24h"))
}

func TestEnqueueAtTakesLocalTimesAndRFC3339(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "lite.db")
	berlin := func(t *testing.T, args ...string) result {
		t.Helper()
		return runLiteEnv(t, []string{"TZ=Europe/Berlin"}, db, "", args...)
	}
	for at, want := range map[string]string{
		"2026-12-01 21:37":          "2026-12-01T20:37:00Z", // local time: Berlin is UTC+1 in December
		"2026-12-01 21:37:05":       "2026-12-01T20:37:05Z",
		"2026-12-01T21:37:05Z":      "2026-12-01T21:37:05Z",
		"2026-12-01T21:37:05+02:00": "2026-12-01T19:37:05Z",
	} {
		t.Run(at+" is accepted", func(t *testing.T) {
			is := is.New(t)
			r := berlin(t, "--json", "enqueue", "--at", at, "x")
			is.Equal(r.code, 0)
			is.True(strings.Contains(r.stdout, `"run_at": "`+want+`"`))
		})
	}
	t.Run("an empty --at is refused, not read as now", func(t *testing.T) {
		is := is.New(t)
		r := berlin(t, "enqueue", "--at", "", "x") // --at "$WHEN" with WHEN unset
		is.Equal(r.code, 2)
		is.True(strings.HasPrefix(r.stderr, `lite: enqueue: --at "" is not a time: give a local date and time`))
		is.Equal(r.stdout, "") // no job
	})
	t.Run("a refused --at names the forms it takes in words", func(t *testing.T) {
		is := is.New(t)
		r := berlin(t, "enqueue", "--at", "1 Dec 2026", "x")
		is.Equal(r.code, 2)
		is.Equal(r.stderr, `lite: enqueue: --at "1 Dec 2026" is not a time: give a local date and time as 2026-12-01 21:37 or 2026-12-01 21:37:05, or RFC 3339 with its zone as 2026-12-01T21:37:05Z or 2026-12-01T21:37:05+01:00`+"\n")
		is.True(!strings.Contains(r.stderr, "2006")) // not Go's layout string
	})
}

func TestEnqueueFileLinesSayWhyTheyAreRefused(t *testing.T) {
	t.Parallel()
	for line, why := range map[string]string{
		`nope`:                               `not a JSON object: each line is one job, as {"payload": "hello", "queue": "mail"}`,
		`null`:                               `not a JSON object: each line is one job, as {"payload": "hello", "queue": "mail"}`,
		`{"payload": "a",}`:                  `not valid JSON: invalid character '}' looking for beginning of object key string`,
		`{"priority": "high"}`:               `"priority" must be a whole number, not a JSON string`,
		`{"run_at": "monday"}`:               `"run_at" "monday" is not an RFC 3339 time (2026-12-01T21:37:05Z)`,
		`{"delay": "5 min"}`:                 `"delay" "5 min" is not a duration (90s, 5m, 1h30m, 7d)`,
		`{"queue": "a"} {}`:                  `text after the job's JSON object: give one object per line`,
		`{"payload": "a", "x": 1}`:           `unknown field "x": a line may have queue, kind, payload, priority, delay, run_at, max_attempts, unique_key, unique_for, unique_until, debounce, tags, meta, after, on_dep_failure, callback, name, after_names, key, expires_in, expires_at`,
		`{"expires_in": "soon"}`:             `"expires_in" "soon" is not a duration (90s, 5m, 1h30m, 7d)`,
		`{"expires_at": "monday"}`:           `"expires_at" "monday" is not an RFC 3339 time (2026-12-01T21:37:05Z)`,
		`{"after": [1e20]}`:                  `"after" must be a whole number written in digits (no fraction, no exponent), not 1e20`,
		`{"max_attempts": 1e3}`:              `"max_attempts" must be a whole number written in digits (no fraction, no exponent), not 1e3`,
		`{"priority": 99999999999999999999}`: `"priority" 99999999999999999999 is out of range`,
		`{"run_at": 5}`:                      `"run_at" must be a string, an RFC 3339 time (2026-12-01T21:37:05Z)`,
		`{"delay": "5m", "run_at": "2030-01-01T00:00:00Z"}`:          `give "delay" or "run_at", not both`,
		`{"debounce": "5m", "unique_key": "k", "delay": "1m"}`:       `give "debounce", "delay" or "run_at", one of them: "debounce" sets the run time`,
		`{"expires_in": "5m", "expires_at": "2030-01-01T00:00:00Z"}`: `give "expires_in" or "expires_at", not both`,
		`{"unique_for": "5m"}`:                                       `"unique_for", "unique_until" and "debounce" need a "unique_key"`,
		`{"run_at": "0001-01-01T00:00:00Z"}`:                         `"run_at" 0001-01-01T00:00:00Z is outside 1970-01-01 to 9999-12-31`,
		`{"expires_at": "0001-01-01T00:00:00Z"}`:                     `"expires_at" 0001-01-01T00:00:00Z is outside 1970-01-01 to 9999-12-31`,
		`{"expires_in": "0s"}`:                                       `"expires_in" "0s" is no time: give a positive duration, or leave it out`,
		`{"queue": ""}`:                                              `"queue" is empty: give a queue's name, or leave it out for --queue's`,
		`{"max_attempts": -1}`:                                       `"max_attempts" -1 is negative: give at least 1, or leave it out`,
	} {
		t.Run(line+" is refused with its line and reason", func(t *testing.T) {
			is := is.New(t)
			db := filepath.Join(t.TempDir(), "lite.db")
			r := runLite(t, db, "{\"payload\": \"fine\"}\n\n"+line+"\n", "enqueue", "--file", "-")
			is.Equal(r.code, 2) // bad input, as a bad flag is
			is.True(strings.HasSuffix(r.stderr, "lite: enqueue --file -: line 3: "+why+"; nothing was enqueued\n"))
		})
	}
}

func TestABadScheduleSpecIsAUsageError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "x")
	for _, args := range [][]string{
		{"schedule", "add", "nightly", "30 6 * *", "-k", "report"},
		{"schedule", "add", "nightly", "@every 1m", "-k", "report", "--tz", "Mars/Base"},
	} {
		r := runLite(t, db, "", args...)
		is.Equal(r.code, 2)
		is.True(strings.HasPrefix(r.stderr, "lite: set schedule nightly: "))
	}
	is.True(!strings.Contains(mustLite(t, db, "", "schedule", "ls"), "nightly")) // nothing stored
}

func TestEnqueueWithNoPayloadFromATerminalIsRefused(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "lite.db")
	t.Run("no argument and a device on stdin is refused, with what to give", func(t *testing.T) {
		is := is.New(t)
		devNull, err := os.Open(os.DevNull) // a device, as a terminal is
		is.NoErr(err)
		defer devNull.Close()
		cmd := exec.CommandContext(t.Context(), liteBin, "--db", db, "enqueue")
		cmd.Stdin = devNull
		var errOut bytes.Buffer
		cmd.Stderr = &errOut
		err = cmd.Run()
		exit, ok := err.(*exec.ExitError)
		is.True(ok)
		is.Equal(exit.ExitCode(), 2)
		is.True(strings.HasSuffix(errOut.String(), `lite: enqueue: no payload: give it as an argument, - to read it from standard input, or "" for an empty one`+"\n"))
	})
	t.Run(`an empty pipe, or "", is an empty payload`, func(t *testing.T) {
		is := is.New(t)
		mustLite(t, db, "", "enqueue")
		mustLite(t, db, "", "enqueue", "")
		jobs := listJobs(t, db)
		is.Equal(len(jobs), 2)
		is.Equal(jobs[0].Payload+jobs[1].Payload, "")
	})
}

// Ids and counts are decimal: a leading zero, a 0x or a 1_0 never names
// another job.
func TestNumbersAreDecimalDigits(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	for range 9 {
		mustLite(t, db, "", "enqueue", "x")
	}
	for _, id := range []string{"0x9", "0b11", "1_0", "011"} {
		r := runLite(t, db, "", "cancel", id)
		if id == "011" {
			is.Equal(r.stderr, "lite: cancel job 11: job not found\n") // eleven, not nine
			continue
		}
		is.Equal(r.code, 2)
		is.True(strings.Contains(r.stderr, "is not a whole number in decimal digits"))
	}
	is.Equal(runLite(t, db, "", "ls", "-n", "010").code, 0) // ten
	r := runLite(t, db, "", "show", "99999999999999999999")
	is.Equal(r.code, 2)
	is.True(strings.Contains(r.stderr, `"99999999999999999999" is out of range: at most 9223372036854775807`))
	is.True(!strings.Contains(mustLite(t, db, "", "ls", "-s", "cancelled"), " cancelled "))
}
