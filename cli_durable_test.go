package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// durableScript is a lite work command made of steps, a failing first
// attempt, a sleep and an await: $D holds what it leaves behind.
const durableScript = `set -e
a=$(lite step a -- sh -c 'echo A >> "$D/runs"; echo a-out')
b=$(lite step b -- sh -c 'echo B >> "$D/runs"; echo b-out')
if [ ! -e "$D/failed" ]; then touch "$D/failed"; exit 1; fi
lite sleep 1s
p=$(lite await-signal go)
echo "$a $b $p"
`

func TestAShellScriptsStepsRunOnceAcrossAttemptsSleepsAndSignals(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		dir := t.TempDir()
		id := strings.TrimSpace(mustLite(t, db, "", "enqueue", "--max-attempts", "2", "x"))
		w := exec.Command(liteBin, "--db", db, "work", "--", "sh", "-c", durableScript)
		w.Env = append(os.Environ(), "D="+dir, "PATH="+filepath.Dir(liteBin)+":"+os.Getenv("PATH"))
		is.NoErr(w.Start())
		t.Cleanup(func() { w.Process.Kill(); w.Wait() })
		show := func() (j struct {
			State    string `json:"state"`
			Attempts int    `json:"attempts"`
			Parked   string `json:"parked"`
			Result   string `json:"result"`
			Steps    []struct {
				Name string `json:"name"`
			} `json:"steps"`
		}) {
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "show", "--json", id)), &j))
			return j
		}
		eventually(t, "the job parks awaiting its signal", func() bool { return show().Parked == "signal" })
		is.True(strings.Contains(mustLite(t, db, "", "ls"), " awaiting ")) // as what it waits for, not as available
		is.True(strings.Contains(mustLite(t, db, "", "ls", "-s", "awaiting"), "\n"+id+" "))
		is.Equal(strings.Count(mustLite(t, db, "", "ls", "-s", "sleeping,running"), "\n"), 1) // the header alone
		var stats []struct {
			Counts   map[string]int `json:"counts"`
			Awaiting int            `json:"awaiting"`
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "stats")), &stats))
		is.Equal(stats[0].Counts["available"], 1)
		is.Equal(stats[0].Awaiting, 1)
		is.True(strings.Contains(mustLite(t, db, "", "stats"), "sleeping  awaiting"))
		// The payload from standard input, as a payload over a shell
		// argument's size would be sent.
		var sent struct {
			ID     json.Number `json:"id"`
			Signal string      `json:"signal"`
			Bytes  int         `json:"bytes"`
			Sent   bool        `json:"sent"`
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "hello", "--json", "signal", "--idempotency-key", "k1", id, "go", "-")), &sent))
		is.Equal(sent.ID.String(), id)
		is.Equal(sent.Signal, "go")
		is.Equal(sent.Bytes, 5)
		is.True(sent.Sent)
		// Delivered again: not sent, so no second signal waits.
		is.Equal(mustLite(t, db, "", "signal", "--idempotency-key", "k1", id, "go", "hello"), "job "+id+" had a signal of key k1 already: go not sent\n")
		eventually(t, "the job is done", func() bool { return show().State == "done" })
		j := show()
		is.Equal(j.Result, "a-out b-out hello\n")
		is.Equal(j.Attempts, 2) // the failed one and the last: the parks spent none
		runs, err := os.ReadFile(filepath.Join(dir, "runs"))
		is.NoErr(err)
		is.Equal(string(runs), "A\nB\n") // each step's command ran once
	})
}

// A Go job parked by Await shows what it awaits, and not its dependency
// policy, which an await does not follow.
func TestShowSaysWhatAnAwaitingJobAwaits(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	q, err := lite.Open(t.Context(), db, lite.Options{})
	is.NoErr(err)
	t.Cleanup(func() { q.Close() })
	child, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "child"})
	is.NoErr(err)
	parent, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "parent"})
	is.NoErr(err)
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	is.NoErr(err)
	w.Handle("parent", func(ctx context.Context, _ *lite.Job) error {
		_, err := lite.Await(ctx, child)
		return err
	})
	ev, err := w.RunJob(t.Context(), parent)
	is.NoErr(err)
	is.Equal(ev.Kind, lite.EventParked)
	out := mustLite(t, db, "", "show", fmt.Sprint(parent))
	is.True(strings.Contains(out, "parked:       awaiting the jobs it waits for\n"))
	is.True(strings.Contains(out, fmt.Sprintf("waits for:    %d (available) (1 not ended; awaited: any end counts)\n", child)))
}

// Arguments are text, since the parser turns bytes that are not UTF-8
// into U+FFFD; a command's own arguments after -- are passed on as they
// were given (a file name in Latin-1), through lite work and lite step.
func TestArgumentsThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "lite.db")
	latin1 := filepath.Join(dir, "caf\xe9.txt")
	is.NoErr(os.WriteFile(latin1, []byte("hello"), 0o644))
	mustLite(t, db, "", "enqueue", "--kind", "read", "x")
	mustLite(t, db, "", "enqueue", "--kind", "step", "x")
	script := filepath.Join(dir, "r\xe9ad.sh") // a command whose own path is Latin-1, checked before it runs
	is.NoErr(os.WriteFile(script, []byte("#!/bin/sh\nexec cat \"$1\"\n"), 0o755))
	mustLite(t, db, "", "work", "--exit-when-empty", "--kind", "read", "--", script, latin1)
	is.Equal(mustLite(t, db, "", "result", "1"), "hello")
	mustLite(t, db, "", "work", "--exit-when-empty", "--kind", "step", "--", liteBin, "step", "s", "--", "cat", latin1)
	is.Equal(mustLite(t, db, "", "result", "2"), "hello")

	// A command named before -- has its arguments read by the parser, not
	// passed on: they must be text.
	r := runLite(t, db, "", "work", "--exit-when-empty", "cat", "--", "\xe9")
	is.Equal(r.code, 2)
	is.True(strings.Contains(r.stderr, `an argument is not valid UTF-8: "\xe9"`))

	cmd := exec.CommandContext(t.Context(), liteBin, "enqueue", "x")
	cmd.Env = append(os.Environ(), "LITE_DB="+filepath.Join(dir, "x\xff.db"))
	r = runCmd(t, cmd)
	is.Equal(r.code, 2)
	is.True(strings.Contains(r.stderr, `LITE_DB is not valid UTF-8: "`))
	_, err := os.Stat(filepath.Join(dir, "x\ufffd.db"))
	is.True(os.IsNotExist(err)) // no file made under the name the parser would have made of it
}

// TestAStepOfARunThatNoLongerHoldsItsJobRunsNothing: lite step checks
// that its run holds the job before it runs the command, not only when it
// records what the command printed: a script whose worker was frozen and
// its job taken would do each step's work a second time.
func TestAStepOfARunThatNoLongerHoldsItsJobRunsNothing(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	q, job := leaseOne(t, db)
	side := filepath.Join(t.TempDir(), "side")
	step := func(name string) result {
		return asJobsCommand(t, db, job)("step", name, "--", "sh", "-c", `echo ran >> "$0"; echo out`, side)
	}
	r := step("a") // the run holds its job: the step runs and is recorded
	is.Equal(r.code, 0)
	is.Equal(r.stdout, "out\n")
	_, err := q.ReleaseUnowned(t.Context(), job.ID)
	is.NoErr(err)
	for _, name := range []string{"a", "b"} { // recorded, and not
		r := step(name)
		is.Equal(r.code, 3)    // the lease-lost exit: stop
		is.Equal(r.stdout, "") // not even a record
		is.True(strings.Contains(r.stderr, "no longer holds the job"))
	}
	b, err := os.ReadFile(side)
	is.NoErr(err)
	is.Equal(string(b), "ran\n") // the first run's, alone
}
