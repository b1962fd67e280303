package main

import (
	"encoding/json"
	"strings"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

func TestWorkersShowsWhoTakesWhatAndWhatNobodyTakes(t *testing.T) {
	t.Parallel()
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

func TestWorkersShowsHowManyOfEachWorkersSlotsAreBusy(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "-q", "busy", "x")
		w := startWorker(t, db, nil, "-q", "busy", "-c", "3", "--grace", "200ms", "--", "sleep", "60")
		var text string
		eventually(t, "the worker runs the job", func() bool {
			text = mustLite(t, db, "", "workers")
			return strings.Contains(text, " 1 of 3 ")
		})
		header := strings.Fields(strings.SplitN(text, "\n", 2)[0])
		is.Equal(header, []string{"WORKER", "QUEUES", "KINDS", "SLOTS", "BUSY", "STARTED", "LAST", "SEEN"})
		var got struct {
			Workers []struct {
				Slots int `json:"slots"`
			} `json:"workers"`
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "workers")), &got))
		is.Equal(got.Workers[0].Slots, 3)
		is.NoErr(w.Process.Signal(syscall.SIGTERM))
		is.NoErr(w.Wait())
	})
}
