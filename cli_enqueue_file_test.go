package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestEnqueueFileErrorsNameTheFileLineAndWhatWasStored(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("a bad line after a committed batch names its line and the jobs stored before it", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			var b strings.Builder
			line := 0
			add := func(s string) int {
				line++
				b.WriteString(s + "\n")
				return line
			}
			add("")
			for i := range 1000 {
				add(fmt.Sprintf(`{"payload":"%d"}`, i))
				if i%100 == 99 {
					add("") // blank lines are not jobs
				}
			}
			firstUnstored := add(`{"payload":"after the first batch"}`)
			add("")
			add(`{"payload":"after the first batch, too"}`)
			bad := add(`{"payload":"` + strings.Repeat("x", lite.DefaultMaxPayloadBytes+1) + `"}`)
			add(`{"payload":"never read"}`)
			file := filepath.Join(t.TempDir(), "jobs.jsonl")
			is.NoErr(os.WriteFile(file, []byte(b.String()), 0o600))

			r := runLite(t, db, "", "enqueue", "--file", file)
			r.stderr = strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n")
			is.Equal(r.code, 1)
			is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
			is.True(strings.HasPrefix(r.stderr, fmt.Sprintf("lite: enqueue --file %s: line %d: ", file, bad)))
			is.True(strings.Contains(r.stderr, "too large"))
			is.True(strings.HasSuffix(r.stderr, fmt.Sprintf("; 1000 jobs before line %d were enqueued, nothing from line %d on\n", firstUnstored, firstUnstored)))
			is.Equal(len(listJobs(t, db)), 1000) // what the message says is stored
		})

		t.Run("a bad line before any commit names its line and says nothing was enqueued", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "keep me")
			r := runLite(t, db, "\n\n{\"payload\":\"a\"}\n\n{oops\n{\"payload\":\"b\"}\n", "enqueue", "--file", "-")
			is.Equal(r.code, 1)
			is.True(strings.HasPrefix(r.stderr, "lite: enqueue --file -: line 5: "))
			is.True(strings.HasSuffix(r.stderr, "; nothing was enqueued\n"))
			is.Equal(len(listJobs(t, db)), 1)
		})

		t.Run("duplicates skipped before a bad line are counted apart from the jobs stored", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			var b strings.Builder
			for i := range 1000 {
				fmt.Fprintf(&b, "{\"payload\":\"%d\",\"unique_key\":\"k%d\"}\n", i, i%998)
			}
			b.WriteString("{\"delay\":\"forever\"}\n")
			r := runLite(t, db, b.String(), "enqueue", "--file", "-")
			r.stderr = strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n")
			is.Equal(r.code, 1)
			is.True(strings.HasPrefix(r.stderr, `lite: enqueue --file -: line 1001: "delay" "forever" is not a duration`))
			is.True(strings.HasSuffix(r.stderr, "; 998 jobs before line 1001 were enqueued (2 duplicates skipped), nothing from line 1001 on\n"))
			is.Equal(len(listJobs(t, db)), 998)
		})
	})
}
