package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCLIUniqueWindowsAndDebounce(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("--unique-for holds the key after the job is done", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			is.Equal(mustLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-for", "1d", "x"), "1\n")
			mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
			r := runLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-for", "1d", "x")
			is.Equal(r.code, 1)
			is.Equal(r.stderr, "lite: enqueue: unique key \"k\" is held by job 1\n")
			r = runLite(t, db, "", "enqueue", "--unique-key", "k", "x")
			is.Equal(r.code, 1) // a key alone sees the period's hold too
			is.Equal(r.stderr, "lite: enqueue: unique key \"k\" is held by job 1\n")
		})

		t.Run("--unique-until finished holds it until the job is done", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-until", "finished", "x")
			is.Equal(runLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-until", "finished", "x").code, 1)
			mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
			is.Equal(mustLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-until", "finished", "x"), "2\n")
		})

		t.Run("--debounce gives the pending job the new payload and prints its id", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			is.Equal(mustLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-until", "started", "--debounce", "1m", "a"), "1\n")
			r := runLite(t, db, "", "enqueue", "--unique-key", "k", "--unique-until", "started", "--debounce", "1m", "b")
			is.Equal(r.code, 0)
			is.Equal(r.stdout, "1\n")
			is.Equal(r.stderr, "enqueue: debounced into job 1, which had not started\n")
			var j cliJob
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "1")), &j))
			is.Equal(j.Payload, "b")
			is.Equal(len(listJobs(t, db)), 1)
		})

		t.Run("the fields of enqueue --file lines hold and debounce", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			lines := `{"payload": "a", "unique_key": "d", "unique_until": "started", "debounce": "1m"}
{"payload": "b", "unique_key": "d", "unique_until": "started", "debounce": "1m"}
{"payload": "c", "unique_key": "p", "unique_for": "7d"}
{"payload": "c", "unique_key": "p", "unique_for": "7d"}
`
			is.Equal(mustLite(t, db, lines, "enqueue", "--file", "-"), "enqueued 2 jobs (1 duplicates skipped, 1 debounced into jobs not yet started)\n")
			var got struct{ Enqueued, Duplicates, Debounced int }
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, lines, "--json", "enqueue", "--file", "-")), &got))
			is.Equal(got, struct{ Enqueued, Duplicates, Debounced int }{0, 2, 2}) // the pending job takes both again
		})

		t.Run("bad unique settings are a usage error on one line", func(t *testing.T) {
			for _, args := range [][]string{
				{"--unique-for", "1h"},
				{"--unique-until", "started"},
				{"--debounce", "1m"},
				{"--unique-key", "k", "--unique-until", "done"},
				{"--unique-key", "k", "--unique-until", ""},
				{"--unique-key", "k", "--unique-until", "st\x1barted"},
				{"--unique-key", "k", "--unique-for", "-1m"},
				{"--unique-key", "k", "--unique-for", "0"},
				{"--unique-key", "k", "--debounce", "0s"},
				{"--unique-key", "k", "--unique-for", "5parsecs"},
				{"--unique-key", "k", "--unique-for", "99999999d"},
				{"--unique-key", "k", "--debounce", "-1s"},
				{"--unique-key", "k", "--debounce", "1m", "--delay", "1m"},
				{"--unique-key", "k", "--debounce", "1m", "--at", "2030-01-01 00:00"},
				{"--unique-key", "k", "--debounce", "1m", "--expires-in", "30s"},
				{"--unique-key", "k", "--unique-for", "1h", "--file", "-"},
			} {
				t.Run(strings.Join(args, " "), func(t *testing.T) {
					is := is.New(t)
					db := e.db(t)
					a := append([]string{"enqueue"}, args...)
					if !strings.Contains(strings.Join(args, " "), "--file") {
						a = append(a, "x")
					}
					r := runLite(t, db, "", a...)
					is.Equal(r.code, 2)                              // a usage error
					is.Equal(strings.Count(r.stderr, "\n"), 1)       // on one line
					is.True(!strings.ContainsRune(r.stderr, '\x1b')) // escaped
				})
			}
		})

		t.Run("a line's bad unique field names its line", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			for line, why := range map[string]string{
				`{"unique_key": "k", "unique_until": "done"}`: `"unique_until" "done" is not started or finished`,
				`{"unique_key": "k", "unique_for": "soon"}`:   `"unique_for" "soon" is not a duration (90s, 5m, 1h30m, 7d)`,
				`{"unique_key": "k", "debounce": "soon"}`:     `"debounce" "soon" is not a duration (90s, 5m, 1h30m, 7d)`,
				`{"unique_for": "1h"}`:                        `"unique_for", "unique_until" and "debounce" need a "unique_key"`,
				`{"unique_key": "k", "unique_for": "0d"}`:     `"unique_for" "0d" is no time`,
			} {
				r := runLite(t, db, line+"\n", "enqueue", "--file", "-")
				is.Equal(r.code, 2) // a bad line of a file is bad input
				is.True(strings.Contains(r.stderr, "line 1: "))
				is.True(strings.Contains(r.stderr, why))
			}
			is.Equal(len(listJobs(t, db)), 0)
		})
	})
}
