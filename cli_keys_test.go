package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestCLIKeysAndExpiry(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("a job keeps its key and expiry, and show prints them", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--key", "acme", "--expires-at", "2030-01-02T03:04:05Z", "x")
			var j struct {
				Key       string `json:"key"`
				ExpiresAt string `json:"expires_at"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "1")), &j))
			is.Equal(j.Key, "acme")
			is.Equal(j.ExpiresAt, "2030-01-02T03:04:05Z")
			out := mustLite(t, db, "", "show", "1")
			is.True(strings.Contains(out, "key:          acme\n"))
		})

		t.Run("an expired job is cancelled by reclaim with the reason", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--expires-at", "2001-02-03T04:05:06Z", "late")
			mustLite(t, db, `{"payload": "also late", "expires_at": "2001-02-03T04:05:06Z"}`+"\n", "enqueue", "--file", "-")
			is.Equal(mustLite(t, db, "", "reclaim"),
				"job 1 cancelled: it expired before it started\njob 2 cancelled: it expired before it started\n2 expired jobs cancelled\n0 jobs reclaimed\n")
			is.Equal(len(listJobs(t, db, "--state", "cancelled")), 2)
			out := mustLite(t, db, "", "show", "1")
			is.True(strings.Contains(out, "state:        cancelled\n"))
			is.True(strings.Contains(out, "expired: not started by 2001-02-03T04:05:06.000Z")) // the reason
		})

		t.Run("limit sets and prints per-key settings", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			is.Equal(mustLite(t, db, "", "limit", "q", "--per-key", "2", "--sequence", "block"),
				"queue q: at most 2 running per key, one at a time per key in order (block after a dead or cancelled job) (hand)\n")
			is.Equal(mustLite(t, db, "", "limit", "q", "--sequence", "none"), "queue q: at most 2 running per key (hand)\n")
			is.Equal(mustLite(t, db, "", "limit", "q", "--per-key", "0"), "queue q: no limits\n")
		})

		t.Run("bad key settings are refused with exit 2", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			is.Equal(runLite(t, db, "", "limit", "q", "--sequence", "later").code, 2)
			is.Equal(runLite(t, db, "", "limit", "q", "--per-key", "-1").code, 2)
			is.Equal(runLite(t, db, "", "enqueue", "--expires-in", "1m", "--expires-at", "2030-01-01T00:00:00Z", "x").code, 2)
			is.Equal(runLite(t, db, "", "enqueue", "--expires-in", "-1m", "x").code, 2)
		})

		t.Run("work --exit-when-empty runs a sequence's jobs to the last", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "limit", "s", "--sequence", "continue")
			for i := range 10 {
				mustLite(t, db, "", "enqueue", "-q", "s", "--key", "k", strconv.Itoa(i))
			}
			mustLite(t, db, "", "work", "-c", "4", "--exit-when-empty", "--", "true")
			is.Equal(len(listJobs(t, db, "--state", "done")), 10)
		})

		t.Run("a key no job can have, or an expiry before the run time, is a usage error on one line", func(t *testing.T) {
			for _, args := range [][]string{
				{"--key", ""},
				{"--key", "a\x1bb"},
				{"--key", strings.Repeat("k", 257)},
				{"--expires-in", "1m", "--delay", "2m"},
				{"--expires-at", "2030-01-01T00:00:00Z", "--at", "2030-01-01T00:00:00Z"},
			} {
				is := is.New(t)
				db := e.db(t)
				r := runLite(t, db, "", append(append([]string{"enqueue"}, args...), "x")...)
				is.Equal(r.code, 2)                              // a usage error
				is.Equal(strings.Count(r.stderr, "\n"), 1)       // on one line
				is.True(!strings.ContainsRune(r.stderr, '\x1b')) // the key escaped
			}
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "--key", strings.Repeat("k", 256), "x") // the longest key
		})
	})
}
