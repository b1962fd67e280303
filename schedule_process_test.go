//go:build unix

package main

import (
	"encoding/json"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestWorkProcessesFireEachTickOnce runs four `lite work` processes on
// one queue with a schedule every second for 30 seconds of real time:
// every tick from the first to the last is enqueued exactly once, each
// job naming its tick in its run_at.
func TestWorkProcessesFireEachTickOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs four processes for 30 seconds")
	}
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Parallel()
		is := is.New(t)
		db := e.db(t)
		// Paused until every worker runs: a tick due while none did would
		// be caught up late, once, as it should be, but not on time.
		mustLite(t, db, "", "schedule", "add", "tick", "@every 1s", "--kind", "tick")
		mustLite(t, db, "", "schedule", "pause", "tick")
		var workers []*watchedWorker
		for range 4 {
			workers = append(workers, startWatched(t, db, "-c", "2", "--", "true"))
		}
		eventually(t, "four workers run", func() bool {
			var running struct {
				Workers []json.RawMessage `json:"workers"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "workers")), &running))
			return len(running.Workers) == 4
		})
		mustLite(t, db, "", "schedule", "resume", "tick")
		time.Sleep(30 * time.Second) // the length of the run, not a wait for an outcome
		for _, w := range workers {
			is.NoErr(w.cmd.Process.Signal(syscall.SIGTERM))
		}
		for _, w := range workers {
			if code := w.wait(t); code != 0 {
				t.Errorf("a worker exited %d: %s", code, w.log())
			}
		}

		var jobs []struct {
			Kind  string    `json:"kind"`
			RunAt time.Time `json:"run_at"`
		}
		out := mustLite(t, db, "", "--json", "ls", "-n", "10000")
		is.NoErr(json.Unmarshal([]byte(out), &jobs))
		var ticks []time.Time
		for _, j := range jobs {
			is.Equal(j.Kind, "tick")
			ticks = append(ticks, j.RunAt)
		}
		slices.SortFunc(ticks, func(a, b time.Time) int { return a.Compare(b) })
		is.True(len(ticks) >= 25) // the workers fired all through the run
		for i := 1; i < len(ticks); i++ {
			if d := ticks[i].Sub(ticks[i-1]); d != time.Second {
				t.Errorf("tick %d at %s comes %s after the one before: want one job per tick, none twice",
					i, ticks[i].Format(time.RFC3339Nano), d)
			}
		}
		s := listSchedules(t, db)[0]
		is.True(s.LastRunAt.Equal(ticks[len(ticks)-1])) // the last tick fired is the last job's
		t.Logf("%d jobs over the run", len(ticks))
	})
}
