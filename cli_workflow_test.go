package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestEnqueueRefusesAWorkflowFlagThatNamesNothing(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "first")
		for _, args := range [][]string{
			{"--after", ""},
			{"--after=-1"},
			{"--after", "0"},
			{"--after", "1", "--unique-key", "u"},
			{"--batch", "X"},
			{"--batch", ""},
			{"--callback", ""},
			{"--callback", "a\x01b"},
		} {
			t.Run(strings.Join(args, " ")+" is a usage error of one line", func(t *testing.T) {
				is := is.New(t)
				r := runLite(t, db, "", append(append([]string{"enqueue"}, args...), "p")...)
				is.Equal(r.code, 2)
				is.Equal(strings.Count(r.stderr, "\n"), 1)
				is.True(!strings.ContainsRune(r.stderr, '\x01'))
			})
		}
		t.Run("a dependency named twice is one dependency", func(t *testing.T) {
			is := is.New(t)
			mustLite(t, db, "", "enqueue", "--after", "1,1", "second")
			r := runLite(t, db, `{"name": "a"}`+"\n"+`{"name": "b", "after_names": ["a", "a"]}`+"\n", "enqueue", "--file", "-")
			is.Equal(r.code, 0)
			is.Equal(r.stderr, "")
			mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
			is.Equal(strings.Count(mustLite(t, db, "", "ls", "--state", "done"), "\n"), 5) // header and four jobs
		})
	})
}

func TestWorkExitWhenEmptyDrainsAChain(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		var file strings.Builder
		fmt.Fprintln(&file, `{"name": "j0"}`)
		for i := 1; i < 200; i++ {
			fmt.Fprintf(&file, `{"name": "j%d", "after_names": ["j%d"]}`+"\n", i, i-1)
		}
		mustLite(t, db, file.String(), "enqueue", "--file", "-")
		r := runLite(t, db, "", "work", "-c", "4", "--exit-when-empty", "--", "true")
		is.Equal(r.code, 0)
		done := mustLite(t, db, "", "ls", "--state", "done", "-n", "1000")
		is.Equal(strings.Count(done, "\n"), 201) // a header and every job of the chain
	})
}

func TestShowGraphAndListABatch(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		db := e.db(t)
		mustLite(t, db, `{"name": "fetch", "kind": "fetch"}
{"name": "small", "kind": "resize", "after_names": ["fetch"]}
{"name": "large", "kind": "resize", "after_names": ["fetch"]}
{"kind": "<b>publish", "after_names": ["small", "large"]}
`, "enqueue", "--file", "-", "--batch", "report")

		t.Run("show --graph lists every job connected, each after what it waits for", func(t *testing.T) {
			is := is.New(t)
			out := mustLite(t, db, "", "show", "--graph", "2")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			is.Equal(len(lines), 5) // a header and four jobs
			is.Equal(strings.Fields(lines[0]), []string{"ID", "LAYER", "STATE", "QUEUE", "KIND", "WAITS", "FOR"})
			is.Equal(strings.Fields(lines[1]), []string{"1", "0", "available", "default", "fetch", "-"})
			is.Equal(strings.Fields(lines[3]), []string{"3", "1", "blocked", "default", "resize", "1"})
			is.Equal(strings.Fields(lines[4]), []string{"4", "2", "blocked", "default", "<b>publish", "2,3"})
			var g struct {
				Jobs []struct {
					ID       int64   `json:"id"`
					WaitsFor []int64 `json:"waits_for"`
				} `json:"jobs"`
				Truncated bool `json:"truncated"`
			}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "show", "--graph", "--json", "4")), &g))
			is.Equal(len(g.Jobs), 4)
			is.Equal(g.Jobs[3].WaitsFor, []int64{2, 3})
			is.True(!g.Truncated)
		})

		t.Run("show --graph of an unknown job fails in one line", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "show", "--graph", "99")
			is.True(r.code != 0)
			is.Equal(r.stderr, "lite: show job 99: job not found\n")
		})

		t.Run("ls --batch lists the batch's jobs, by state", func(t *testing.T) {
			is := is.New(t)
			is.Equal(len(listJobs(t, db, "--batch", "1")), 4)
			is.Equal(len(listJobs(t, db, "--batch", "1", "--state", "blocked")), 3)
			is.Equal(len(listJobs(t, db, "--batch", "2")), 0)
			r := runLite(t, db, "", "ls", "--batch=-1")
			is.Equal(r.code, 2)
			is.True(strings.Contains(mustLite(t, db, "", "batch", "1", "--json"), `"kind": "report"`)) // its callback
		})
	})
}
