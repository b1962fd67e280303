package main

import (
	"encoding/json"
	"strings"
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
	Owner     string    `json:"owner"`
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
	t.Parallel()
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
			{"an escape in a kind", []string{"add", "nightly", "@daily", "--kind", "k\x1b]0;x\a"}, `lite: schedule add: --kind "k\x1b]0;x\a" contains a control character` + "\n"},
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

func TestEveryBadScheduleSpecIsAUsageError(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/lite.db"
	mustLite(t, db, "", "enqueue", "x") // the new-file notice comes here
	for name, spec := range map[string]string{
		"four fields":             "0 3 * *",
		"a control character":     "0 \x1b[31m * * *",
		"a date that never comes": "0 12 31 2 *",
	} {
		t.Run("a spec with "+name+" exits 2", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "schedule", "add", "nightly", spec, "--kind", "k")
			is.Equal(r.code, 2)
			is.Equal(strings.Count(r.stderr, "\n"), 1)
		})
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
