package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// lsRows are the table's rows, each cut into its columns where the
// header's start (tabwriter pads every column to the header's place).
func lsRows(out string) [][]string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	starts := regexp.MustCompile(`[A-Z]+( [A-Z]+)?`).FindAllStringIndex(lines[0], -1)
	var rows [][]string
	for _, line := range lines {
		var row []string
		for i, s := range starts {
			end := len(line)
			if i+1 < len(starts) {
				end = min(starts[i+1][0], len(line))
			}
			row = append(row, strings.TrimSpace(line[min(s[0], len(line)):end]))
		}
		rows = append(rows, row)
	}
	return rows
}

func TestLsListsNewestFirstWithItsTimes(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "one")
		mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
		mustLite(t, db, "", "enqueue", "two")
		mustLite(t, db, "", "enqueue", "--at", "2030-01-02T03:04:05Z", "three")
		ids := func(args ...string) []int64 {
			var jobs []cliJob
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", append([]string{"--json", "ls"}, args...)...)), &jobs))
			var got []int64
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			return got
		}

		t.Run("the table is newest first, with created, run-at and finished columns", func(t *testing.T) {
			is := is.New(t)
			rows := lsRows(mustLite(t, db, "", "ls"))
			is.Equal(rows[0], []string{"ID", "STATE", "QUEUE", "KIND", "PRIORITY", "ATTEMPTS", "GENERATION", "LOCKED BY", "TAGS", "PROGRESS", "CREATED", "RUN AT", "FINISHED"})
			is.Equal(len(rows), 4)
			rfc3339 := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
			three, one := rows[1], rows[3]
			is.Equal(three[0], "3")
			is.Equal(three[len(three)-2:], []string{"2030-01-02T03:04:05Z", "-"}) // its run-at; not finished
			is.True(rfc3339.MatchString(three[len(three)-3]))                     // created
			is.Equal(rows[2][0], "2")
			is.Equal(one[0], "1")
			is.True(rfc3339.MatchString(one[len(one)-1])) // finished
			is.Equal(one[9], "-")                         // the progress column stays
		})
		t.Run("--oldest-first lists in id order; --json changes only its order", func(t *testing.T) {
			is := is.New(t)
			is.Equal(ids(), []int64{3, 2, 1})
			is.Equal(ids("--oldest-first"), []int64{1, 2, 3})
			is.Equal(lsRows(mustLite(t, db, "", "ls", "--oldest-first"))[1][0], "1")
			is.Equal(ids("-s", "done", "-s", "available"), []int64{3, 2, 1}) // states merged, newest first
		})
		t.Run("--before pages newest first, --after oldest first", func(t *testing.T) {
			is := is.New(t)
			is.Equal(ids("-n", "2"), []int64{3, 2})
			is.Equal(ids("-n", "2", "--before", "2"), []int64{1})
			is.Equal(ids("--oldest-first", "-n", "2"), []int64{1, 2})
			is.Equal(ids("--oldest-first", "-n", "2", "--after", "2"), []int64{3})
			for _, args := range [][]string{{"--after", "1"}, {"--oldest-first", "--before", "3"}, {"--before=-1"}} {
				r := runLite(t, db, "", append([]string{"ls"}, args...)...)
				is.Equal(r.code, 2)
				is.Equal(r.stdout, "")
				is.Equal(strings.Count(r.stderr, "\n"), 1)
			}
		})
	})
}
