package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestEnqueueRefusesAWorkflowFlagThatNamesNothing(t *testing.T) {
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
