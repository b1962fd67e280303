package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestEnqueueFileErrorsNameTheFileLineAndWhatWasStored(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		t.Run("a bad line after a thousand good ones names its line and stores none of them", func(t *testing.T) {
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
			add(`{"payload":"after the first batch"}`)
			add("")
			add(`{"payload":"after the first batch, too"}`)
			bad := add(`{"payload":"` + strings.Repeat("x", lite.DefaultMaxPayloadBytes+1) + `"}`)
			add(`{"payload":"never read"}`)
			file := filepath.Join(t.TempDir(), "jobs.jsonl")
			is.NoErr(os.WriteFile(file, []byte(b.String()), 0o600))

			r := runLite(t, db, "", "enqueue", "--file", file)
			r.stderr = strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n")
			is.Equal(r.code, 2)                        // bad input
			is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
			is.True(strings.HasPrefix(r.stderr, fmt.Sprintf("lite: enqueue --file %s: line %d: ", file, bad)))
			is.True(strings.Contains(r.stderr, "too large"))
			is.True(strings.HasSuffix(r.stderr, "; nothing was enqueued\n"))
			is.Equal(len(listJobs(t, db)), 0) // every line is checked before any is stored
		})

		t.Run("a line that is not UTF-8 is refused, not read with its bytes replaced", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			r := runLite(t, db, "{\"unique_key\":\"k\xff\",\"payload\":\"p\"}\n{\"unique_key\":\"k\xfe\",\"payload\":\"p\"}\n", "enqueue", "--file", "-")
			is.Equal(r.code, 2)
			is.True(strings.Contains(r.stderr, "line 1: the line is not valid UTF-8"))
			is.Equal(len(listJobs(t, db)), 0)
		})

		t.Run("a bad line before any commit names its line and says nothing was enqueued", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			mustLite(t, db, "", "enqueue", "keep me")
			r := runLite(t, db, "\n\n{\"payload\":\"a\"}\n\n{oops\n{\"payload\":\"b\"}\n", "enqueue", "--file", "-")
			is.Equal(r.code, 2)
			is.True(strings.HasPrefix(r.stderr, "lite: enqueue --file -: line 5: "))
			is.True(strings.HasSuffix(r.stderr, "; nothing was enqueued\n"))
			is.Equal(len(listJobs(t, db)), 1)
		})

		t.Run("a line only the database refuses, after a committed batch, names the jobs stored before it, duplicates apart", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			var b strings.Builder
			for i := range 1000 {
				fmt.Fprintf(&b, "{\"payload\":\"%d\",\"unique_key\":\"k%d\"}\n", i, i%998)
			}
			b.WriteString("{\"after\":[99999]}\n") // no such job: no check of the line can tell
			r := runLite(t, db, b.String(), "enqueue", "--file", "-")
			r.stderr = strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n")
			is.Equal(r.code, 1)
			is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
			is.True(strings.HasPrefix(r.stderr, `lite: enqueue --file -: line 1001: `))
			is.True(strings.Contains(r.stderr, "job 99999"))
			is.True(strings.HasSuffix(r.stderr, "; 998 jobs before line 1001 were enqueued (2 duplicates skipped), nothing from line 1001 on\n"))
			is.Equal(len(listJobs(t, db)), 998)
		})

		t.Run("a bad queue or kind on a line is a usage error naming the line, and the good lines are not stored", func(t *testing.T) {
			for _, bad := range []string{`{"queue":"mail\u001b[2J"}`, `{"kind":"a\u0000b"}`, `{"max_attempts":-1}`} {
				is := is.New(t)
				db := e.db(t)
				mustLite(t, db, "", "enqueue", "keep me")
				r := runLite(t, db, "{\"payload\":\"good\"}\n"+bad+"\n{\"payload\":\"good too\"}\n", "enqueue", "--file", "-")
				is.Equal(r.code, 2)
				is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
				is.Equal(rawUnsafe(r.stderr), "")          // the queue's escape is not printed raw
				is.True(strings.HasPrefix(r.stderr, "lite: enqueue --file -: line 2: "))
				is.True(strings.HasSuffix(r.stderr, "; nothing was enqueued\n"))
				is.Equal(len(listJobs(t, db)), 1) // only the job from before
			}
		})

		t.Run("a bad line two thousand lines in stores none of the lines before it", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			var b strings.Builder
			for i := range 2000 {
				fmt.Fprintf(&b, "{\"payload\":\"%d\"}\n", i)
			}
			b.WriteString(`{"queue":"a\u0007b"}` + "\n")
			r := runLite(t, db, b.String(), "enqueue", "--file", "-")
			r.stderr = strings.TrimPrefix(r.stderr, "lite: created new database "+db+"\n")
			is.Equal(r.code, 2)
			is.True(strings.HasPrefix(r.stderr, "lite: enqueue --file -: line 2001: queue "))
			is.True(strings.HasSuffix(r.stderr, "; nothing was enqueued\n"))
			is.Equal(len(listJobs(t, db)), 0)
		})

		t.Run("expires_in takes days, as --expires-in does", func(t *testing.T) {
			is := is.New(t)
			db := e.db(t)
			before := time.Now()
			mustLite(t, db, "{\"expires_in\":\"2d\"}\n{\"expires_in\":\"1d12h\"}\n", "enqueue", "--file", "-")
			var jobs []struct {
				ExpiresAt time.Time `json:"expires_at"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "ls", "--oldest-first")), &jobs))
			is.Equal(len(jobs), 2)
			for i, want := range []time.Duration{48 * time.Hour, 36 * time.Hour} {
				in := jobs[i].ExpiresAt.Sub(before)
				is.True(in >= want && in < want+time.Minute) // days of 24 hours from now
			}
		})
	})
}
