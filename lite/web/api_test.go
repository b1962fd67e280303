package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// decode reads a JSON answer into v.
func decode(t *testing.T, body []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
}

// apiError is the error an API answer carries.
func apiError(t *testing.T, body []byte) string {
	t.Helper()
	var e struct{ Error string }
	decode(t, body, &e)
	return e.Error
}

func TestAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		h := handler(q, clock, web.Options{})

		t.Run("stats are lite stats --json's", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/api/stats")
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Header().Get("Content-Type"), "application/json")
			var stats []lite.QueueStats
			decode(t, w.Body.Bytes(), &stats)
			is.Equal(len(stats), 1)
			is.Equal(stats[0].Counts, map[lite.State]int64{lite.StateAvailable: 1, lite.StateRunning: 1, lite.StateDead: 1})
		})

		t.Run("the backlog counts the unfinished jobs alone", func(t *testing.T) {
			is := is.New(t)
			var b []lite.QueueStats
			decode(t, get(h, "/api/backlog").Body.Bytes(), &b)
			is.Equal(b, []lite.QueueStats{{Queue: "emails", OldestReady: time.Minute,
				Counts: map[lite.State]int64{lite.StateAvailable: 1, lite.StateRunning: 1}}})
		})

		t.Run("throughput counts the minute the dead job died", func(t *testing.T) {
			is := is.New(t)
			var th []lite.Throughput
			decode(t, get(h, "/api/throughput").Body.Bytes(), &th)
			is.Equal(len(th), 1)
			is.Equal(th[0], lite.Throughput{Queue: "emails", Minute: start.Add(time.Minute), Dead: 1})
		})

		t.Run("jobs come in pages, newest first, with the next page's before", func(t *testing.T) {
			is := is.New(t)
			var page struct {
				Jobs []*lite.Job
				Next int64
			}
			decode(t, get(h, "/api/jobs?limit=2").Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 2)
			is.Equal(page.Jobs[0].ID, ids.available)
			is.Equal(len(page.Jobs[0].Payload), 0) // a page carries no payloads: the job's own call does
			is.Equal(page.Next, ids.running)
			decode(t, get(h, fmt.Sprintf("/api/jobs?limit=2&before=%d", page.Next)).Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 1)
			is.Equal(page.Jobs[0].ID, ids.dead)
			is.Equal(page.Next, int64(0)) // the last page
			decode(t, get(h, "/api/jobs?key=welcome-ada").Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 1)
			is.Equal(page.Jobs[0].UniqueKey, "welcome-ada")
		})

		t.Run("a bad filter is 400", func(t *testing.T) {
			is := is.New(t)
			for _, target := range []string{"/api/jobs?state=lost", "/api/jobs?before=x", "/api/jobs?limit=0", "/api/jobs?limit=1001"} {
				w := get(h, target)
				is.Equal(w.Code, http.StatusBadRequest)
				is.True(apiError(t, w.Body.Bytes()) != "")
			}
		})

		t.Run("a job is lite show --json's, and an unknown one 404", func(t *testing.T) {
			is := is.New(t)
			var j lite.Job
			decode(t, get(h, fmt.Sprintf("/api/jobs/%d", ids.dead)).Body.Bytes(), &j)
			is.Equal(j.State, lite.StateDead)
			is.Equal(j.Errors[0].Error, "smtp: 451 try later")
			w := get(h, "/api/jobs/999")
			is.Equal(w.Code, http.StatusNotFound)
			is.Equal(apiError(t, w.Body.Bytes()), "get job 999: job not found")
			is.Equal(get(h, "/api/nothing").Code, http.StatusNotFound)
		})

		t.Run("workers list the ready jobs none takes", func(t *testing.T) {
			is := is.New(t)
			var ws struct {
				Workers   []lite.WorkerInfo
				Unhandled []lite.Unhandled
			}
			decode(t, get(h, "/api/workers").Body.Bytes(), &ws)
			is.Equal(len(ws.Workers), 0)
			is.Equal(len(ws.Unhandled), 1)
			is.Equal(ws.Unhandled[0].Kind, "welcome")
		})

		t.Run("retry, release, cancel and purge", func(t *testing.T) {
			is := is.New(t)
			w := post(h, fmt.Sprintf("/api/jobs/%d/retry", ids.dead), nil)
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), fmt.Sprintf("{\n  \"id\": %d,\n  \"action\": \"retry\"\n}\n", ids.dead))
			is.Equal(state(t, q, ids.dead), lite.StateAvailable)

			w = post(h, fmt.Sprintf("/api/jobs/%d/retry", ids.dead), nil)
			is.Equal(w.Code, http.StatusConflict) // no longer dead
			is.Equal(apiError(t, w.Body.Bytes()), fmt.Sprintf("retry job %d: invalid job state: it is available, not dead or cancelled", ids.dead))

			is.Equal(post(h, fmt.Sprintf("/api/jobs/%d/release", ids.running), nil).Code, http.StatusOK)
			is.Equal(state(t, q, ids.running), lite.StateAvailable)
			is.Equal(post(h, fmt.Sprintf("/api/jobs/%d/cancel", ids.running), nil).Code, http.StatusOK)
			is.Equal(state(t, q, ids.running), lite.StateCancelled)
			is.Equal(post(h, "/api/jobs/999/cancel", nil).Code, http.StatusNotFound)

			clock.Advance(time.Second)
			w = post(h, "/api/purge", url.Values{"state": {"cancelled"}, "older_than": {"0s"}})
			is.Equal(w.Code, http.StatusOK)
			var p struct{ Deleted int64 }
			decode(t, w.Body.Bytes(), &p)
			is.Equal(p.Deleted, int64(1))
			w = post(h, "/api/purge", url.Values{"older_than": {"a week"}})
			is.Equal(w.Code, http.StatusBadRequest)
			is.Equal(apiError(t, w.Body.Bytes()), `older_than must be a duration such as 24h, not "a week"`)
		})
	})
}

func TestAPIListsOfNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		for _, target := range []string{"/api/stats", "/api/backlog", "/api/throughput", "/api/schedules"} {
			t.Run(target+" of an empty file answers [], never null", func(t *testing.T) {
				is := is.New(t)
				w := get(h, target)
				is.Equal(w.Code, http.StatusOK)
				is.Equal(strings.TrimSpace(w.Body.String()), "[]")
			})
		}
		t.Run("the job and worker lists of an empty file are [], never null", func(t *testing.T) {
			var page map[string]json.RawMessage
			decode(t, get(h, "/api/jobs").Body.Bytes(), &page)
			is.New(t).Equal(string(page["jobs"]), "[]")
			decode(t, get(h, "/api/workers").Body.Bytes(), &page)
			is.New(t).Equal(string(page["workers"]), "[]")
			is.New(t).Equal(string(page["unhandled"]), "[]")
		})
	})
}

func TestAPIServesAJobsLinksAndABatchsProgress(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{})
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
			Steps: []lite.Step{{Name: "fetch", Job: lite.NewJob{Kind: "fetch"}}, {Job: lite.NewJob{Kind: "publish"}, After: []string{"fetch"}}},
			Batch: &lite.Callback{Kind: "report"},
		})
		is.NoErr(err)

		var links struct {
			WaitsFor []struct {
				ID    int64
				State lite.State
			} `json:"waits_for"`
			Pending int
			Policy  string
			Batch   int64
		}
		w := get(h, fmt.Sprintf("/api/jobs/%d/links", wf.IDs[1]))
		is.Equal(w.Code, http.StatusOK)
		decode(t, w.Body.Bytes(), &links)
		is.Equal(len(links.WaitsFor), 1)
		is.Equal(links.WaitsFor[0].ID, wf.IDs[0])
		is.Equal(links.WaitsFor[0].State, lite.StateAvailable)
		is.Equal([]any{links.Pending, links.Policy, links.Batch}, []any{1, "cancel", wf.Batch})

		var b struct{ Total, Done, Pending int }
		w = get(h, fmt.Sprintf("/api/batches/%d", wf.Batch))
		is.Equal(w.Code, http.StatusOK)
		decode(t, w.Body.Bytes(), &b)
		is.Equal([]int{b.Total, b.Done, b.Pending}, []int{2, 0, 2})
		is.Equal(get(h, "/api/batches/999").Code, http.StatusNotFound)
	})
}
