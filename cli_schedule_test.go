package main

import (
	"encoding/json"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

type cliSchedule struct {
	Name      string    `json:"name"`
	Spec      string    `json:"spec"`
	TimeZone  string    `json:"time_zone"`
	Queue     string    `json:"queue"`
	Kind      string    `json:"kind"`
	Payload   string    `json:"payload"`
	Paused    bool      `json:"paused"`
	NextRunAt time.Time `json:"next_run_at"`
	LastRunAt time.Time `json:"last_run_at"`
}

func listSchedules(t *testing.T, db string) []cliSchedule {
	t.Helper()
	var all []cliSchedule
	out := mustLite(t, db, "", "schedule", "ls", "--json")
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatalf("schedule ls --json: %v: %s", err, out)
	}
	return all
}

// TestCLISchedules manages schedules from the command line: add, list,
// pause, resume and remove, with bad input refused on one line and
// nothing stored changed, and untrusted text escaped.
func TestCLISchedules(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		out := mustLite(t, db, "", "schedule", "add", "nightly", "0 3 * * *", "--kind", "report", "--tz", "Europe/Berlin",
			"--queue", "reports", "--payload", "{\"to\":\"ops\"}")
		is.True(strings.HasPrefix(out, "schedule nightly: next run ")) // the schedule file was created by add
		mustLite(t, db, "{\"x\":\"\x1b[2J\"}", "schedule", "add", "often", "@every 5m", "--kind", "poll", "--payload-file", "-")

		all := listSchedules(t, db)
		is.Equal(len(all), 2)
		is.Equal(all[0].Name, "nightly")
		is.Equal(all[0].TimeZone, "Europe/Berlin")
		is.Equal(all[0].Queue, "reports")
		is.Equal(all[0].Payload, `{"to":"ops"}`)
		is.Equal(all[0].NextRunAt.In(mustZone(t, "Europe/Berlin")).Hour(), 3)
		is.Equal(all[1].Payload, "{\"x\":\"\x1b[2J\"}")
		is.True(!strings.Contains(mustLite(t, db, "", "schedule", "ls", "--json"), "\x1b")) // escaped in JSON too

		table := mustLite(t, db, "", "schedule", "ls")
		is.True(strings.Contains(table, "nightly  0 3 * * *  Europe/Berlin  reports"))
		is.True(strings.Contains(table, "often    @every 5m  UTC"))

		is.Equal(mustLite(t, db, "", "schedule", "pause", "often"), "schedule often paused\n")
		is.True(listSchedules(t, db)[1].Paused)
		is.True(strings.Contains(mustLite(t, db, "", "schedule", "ls"), "paused"))
		is.Equal(mustLite(t, db, "", "schedule", "resume", "often"), "schedule often resumed\n")
		is.True(!listSchedules(t, db)[1].Paused)

		before := mustLite(t, db, "", "schedule", "ls", "--json")
		for _, c := range []struct {
			name string
			args []string
			want string
		}{
			{"a spec with four fields", []string{"add", "nightly", "0 3 * *", "--kind", "report"}, `lite: set schedule nightly: spec "0 3 * *": expected exactly 5 fields, found 4: [0 3 * *]` + "\n"},
			{"an unknown zone", []string{"add", "nightly", "@daily", "--kind", "k", "--tz", "Mars/Olympus"}, `lite: set schedule nightly: time zone "Mars/Olympus": unknown time zone Mars/Olympus` + "\n"},
			{"an escape in a name", []string{"add", "a\x1b[2Jb", "@daily", "--kind", "k"}, `lite: set schedule: name "a\x1b[2Jb" contains a control character` + "\n"},
			{"control characters in a spec", []string{"add", "nightly", "*/5\t* * * *\r", "--kind", "k"}, `lite: set schedule nightly: spec "*/5\t* * * *\r" contains a control character` + "\n"},
			{"an escape in a kind", []string{"add", "nightly", "@daily", "--kind", "k\x1b]0;x\a"}, `lite: set schedule nightly: kind "k\x1b]0;x\a" contains a control character` + "\n"},
			{"two payloads", []string{"add", "nightly", "@daily", "--kind", "k", "--payload", "a", "--payload-file", "-"}, "lite: schedule add: give --payload or --payload-file, not both\n"},
			{"pausing an unknown name", []string{"pause", "nope\x1b[2J"}, `lite: no schedule named "nope\x1b[2J"` + "\n"},
			{"resuming an unknown name", []string{"resume", "nope"}, `lite: no schedule named "nope"` + "\n"},
			{"removing an unknown name", []string{"rm", "nope"}, `lite: no schedule named "nope"` + "\n"},
		} {
			t.Run(c.name+" is refused", func(t *testing.T) {
				is := is.New(t)
				r := runLite(t, db, "", append([]string{"schedule"}, c.args...)...)
				is.True(r.code != 0)
				is.Equal(r.stderr, c.want)                                        // one line, escaped
				is.Equal(mustLite(t, db, "", "schedule", "ls", "--json"), before) // nothing changed
			})
		}

		is.Equal(mustLite(t, db, "", "schedule", "rm", "often"), "schedule often removed\n")
		is.Equal(len(listSchedules(t, db)), 1)
	})
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestWorkProcessesFireEachTickOnce runs four `lite work` processes on
// one queue with a schedule every second for 30 seconds of real time:
// every tick from the first to the last is enqueued exactly once, each
// job naming its tick in its run_at.
func TestWorkProcessesFireEachTickOnce(t *testing.T) {
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
