package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCLIPauseResumeAndLimit(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "--queue", "mail", "x")

		t.Run("limits and a pause show in stats", func(t *testing.T) {
			is := is.New(t)
			is.Equal(mustLite(t, db, "", "limit", "mail", "--max-running", "3", "--rate", "50/1s"),
				"queue mail: at most 3 running, 50 starts per 1s (hand)\n")
			is.Equal(mustLite(t, db, "", "limit", "mail", "--rate", "100/m"),
				"queue mail: at most 3 running, 100 starts per 1m0s (hand)\n") // the other limit is kept
			is.Equal(mustLite(t, db, "", "pause", "mail"), "queue mail paused\n")
			is.Equal(mustLite(t, db, "", "pause", "later"), "queue later paused\n") // a queue with no jobs yet
			out := mustLite(t, db, "", "stats")
			is.True(strings.Contains(out, "paused, at most 3 running, 100 starts per 1m0s\n"))
			is.True(strings.Contains(out, "\nlater "))
			var stats []struct {
				Queue      string `json:"queue"`
				Paused     bool   `json:"paused"`
				MaxRunning int    `json:"max_running"`
				Rate       int    `json:"rate"`
				RatePerMS  int64  `json:"rate_per_ms"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "stats")), &stats))
			is.Equal(len(stats), 2)
			is.Equal(stats[1].Queue, "mail")
			is.True(stats[1].Paused)
			is.Equal([3]int64{int64(stats[1].MaxRunning), int64(stats[1].Rate), stats[1].RatePerMS}, [3]int64{3, 100, 60000})
		})

		t.Run("resume and lifting the limits", func(t *testing.T) {
			is := is.New(t)
			is.Equal(mustLite(t, db, "", "resume", "mail"), "queue mail resumed\n")
			is.Equal(mustLite(t, db, "", "limit", "mail", "--rate", "none", "--max-running", "0"), "queue mail: no limits\n")
			is.Equal(mustLite(t, db, "", "resume", "later"), "queue later resumed\n")
			out := mustLite(t, db, "", "stats")
			is.True(strings.HasSuffix(strings.Split(out, "\n")[1], " -")) // why: mail has no flow settings left
			is.True(!strings.Contains(out, "later"))
		})

		t.Run("bad input is one line, exits non-zero and changes nothing", func(t *testing.T) {
			is := is.New(t)
			mustLite(t, db, "", "limit", "mail", "--max-running", "2")
			// The stats without the wait, which the clock moves.
			flow := func() string {
				return strings.Join(slices.DeleteFunc(strings.Split(mustLite(t, db, "", "--json", "stats"), "\n"),
					func(line string) bool { return strings.Contains(line, "oldest_ready_ms") }), "\n")
			}
			before := flow()
			for _, args := range [][]string{
				{"limit", "mail", "--rate", "5"},
				{"limit", "mail", "--rate", "0/1s"},
				{"limit", "mail", "--rate", "5/0s"},
				{"limit", "mail", "--rate", "5/fortnight"},
				{"limit", "mail", "--max-running=-1"},
				{"limit", "a\x1b[2Jb", "--max-running", "1"},
				{"pause", ""},
				{"pause", "a\x1b[2Jb"},
			} {
				r := runLite(t, db, "", args...)
				is.True(r.code != 0)
				is.Equal(strings.Count(r.stderr, "\n"), 1)   // one line
				is.True(!strings.Contains(r.stderr, "\x1b")) // a hostile name is escaped
				is.Equal(flow(), before)
			}
			// Every bad --rate is a usage error, and says what is wrong.
			for _, c := range []struct{ rate, want string }{
				{"1/1ns", `rate "1/1ns": the period is under a millisecond`},
				{"5/1000000000h", `rate "5/1000000000h": the period is too long: at most 2562047h`},
				{"5/fortnight", `rate "5/fortnight": the period is not a positive duration`},
			} {
				r := runLite(t, db, "", "limit", "mail", "--rate", c.rate)
				is.Equal(r.code, 2)
				is.True(strings.Contains(r.stderr, c.want))
				is.Equal(strings.Count(r.stderr, "\n"), 1)
				is.Equal(flow(), before)
			}
		})
	})
}
