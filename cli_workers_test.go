package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestWorkersShowsWhoTakesWhatAndWhatNobodyTakes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "-q", "mail", "-k", "send", "x")
		startWorker(t, db, nil, "-q", "hooks", "--", "cat")

		type listing struct {
			Workers []struct {
				Identity string   `json:"identity"`
				Queues   []string `json:"queues"`
				Kinds    []string `json:"kinds"`
			} `json:"workers"`
			Unhandled []struct {
				Queue string `json:"queue"`
				Kind  string `json:"kind"`
				Count int64  `json:"count"`
			} `json:"unhandled"`
		}
		var got listing
		eventually(t, "the worker announces itself", func() bool {
			got = listing{}
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "workers")), &got))
			return len(got.Workers) == 1
		})
		is.Equal(got.Workers[0].Queues, []string{"hooks"})
		is.Equal(got.Workers[0].Kinds, []string{}) // lite work runs its command for every kind
		is.Equal(len(got.Unhandled), 1)
		is.Equal(got.Unhandled[0].Queue, "mail") // no worker serves the queue
		is.Equal(got.Unhandled[0].Count, int64(1))

		text := mustLite(t, db, "", "workers")
		is.True(strings.Contains(text, "no running worker takes"))
		is.True(strings.Contains(text, "mail"))
		is.True(strings.Contains(mustLite(t, db, "", "stats"), "ready jobs that no running worker takes: 1 "))
	})
}
