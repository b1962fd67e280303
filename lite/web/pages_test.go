package web_test

import (
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

func TestPages(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		h := handler(q, clock, web.Options{})

		t.Run("the overview counts each queue's jobs by state and charts the dead one", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/")
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.True(strings.Contains(body, `<a href="./jobs?queue=emails&amp;state=available">1</a>`))
			is.True(strings.Contains(body, `<a href="./jobs?queue=emails&amp;state=running">1</a>`))
			is.True(strings.Contains(body, `<a href="./jobs?queue=emails&amp;state=dead">1</a>`))
			is.True(strings.Contains(body, "<td>1m0s</td>"))         // the available job has waited a minute
			is.True(strings.Contains(body, "0 done, 1 dead"))        // the chart's total for the hour
			is.True(strings.Contains(body, `data-refresh="./live"`)) // the script refreshes from there
		})

		t.Run("the live part is the queues' table alone", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/live")
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), `<table class="queues">`))
			is.True(!strings.Contains(w.Body.String(), "<html"))
		})

		t.Run("the jobs page filters by state and pages by id", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/jobs?state=dead").Body.String()
			is.True(strings.Contains(body, fmt.Sprintf(`href="./jobs/%d"`, ids.dead)))
			is.True(!strings.Contains(body, fmt.Sprintf(`href="./jobs/%d"`, ids.available)))

			first := get(h, "/jobs?queue=emails&limit=2").Body.String()
			next := fmt.Sprintf("before=%d", ids.running)
			is.True(strings.Contains(first, next)) // newest first: the next page starts below the second job
			second := get(h, "/jobs?queue=emails&limit=2&"+next).Body.String()
			is.True(strings.Contains(second, fmt.Sprintf(`href="./jobs/%d"`, ids.dead)))
			is.True(!strings.Contains(second, fmt.Sprintf(`href="./jobs/%d"`, ids.available)))
			is.True(!strings.Contains(second, "Next page")) // a short page is the last
		})

		t.Run("the jobs page finds a job by unique key and by id", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/jobs?key=welcome-ada").Body.String()
			is.True(strings.Contains(body, fmt.Sprintf(`href="./jobs/%d"`, ids.available)))
			is.True(!strings.Contains(body, fmt.Sprintf(`href="./jobs/%d"`, ids.running)))
			w := get(h, fmt.Sprintf("/jobs?id=%d", ids.dead))
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(w.Header().Get("Location"), fmt.Sprintf("./jobs/%d", ids.dead))
		})

		t.Run("a dead job's page shows its payload as JSON, its error with its generation, and a retry", func(t *testing.T) {
			is := is.New(t)
			w := get(h, fmt.Sprintf("/jobs/%d", ids.dead))
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.True(strings.Contains(body, "Payload (JSON)"))
			is.True(strings.Contains(body, "&#34;invoice&#34;: 7")) // indented
			is.True(strings.Contains(body, "<tr><td>1</td><td>1</td>"))
			is.True(strings.Contains(body, "smtp: 451 try later"))
			is.True(strings.Contains(body, fmt.Sprintf(`href="../jobs/%d/confirm?action=retry"`, ids.dead)))
			is.True(!strings.Contains(body, "action=cancel"))  // a dead job cannot be cancelled
			is.True(!strings.Contains(body, "<h2>Lease</h2>")) // a finished job has no lease
			is.True(strings.Contains(body, "<dt>Generation</dt><dd>1</dd>"))
		})

		t.Run("an available job's page shows no lease", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d", ids.available)).Body.String()
			is.True(!strings.Contains(body, "<h2>Lease</h2>"))
		})

		t.Run("a running job's page shows its lease and heartbeat age", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d", ids.running)).Body.String()
			is.True(strings.Contains(body, "<h2>Lease</h2>"))
			is.True(strings.Contains(body, "<dd>worker-1</dd>"))
			is.True(strings.Contains(body, "heartbeat age 2m0s"))
			is.True(strings.Contains(body, "<h2>Payload</h2>")) // not JSON
			is.True(strings.Contains(body, "plain text"))
			is.True(strings.Contains(body, "action=release"))
			is.True(strings.Contains(body, "action=cancel"))
		})

		t.Run("the confirmation page posts the action", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d/confirm?action=retry", ids.dead)).Body.String()
			is.True(strings.Contains(body, fmt.Sprintf(`<form method="post" action="../../jobs/%d/retry">`, ids.dead)))
			is.Equal(get(h, fmt.Sprintf("/jobs/%d/confirm?action=explode", ids.dead)).Code, http.StatusBadRequest)
		})

		t.Run("the workers page lists ready jobs no worker takes", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/workers")
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "<td>emails</td><td>welcome</td><td>1</td>"))
		})

		t.Run("the purge page asks before it deletes", func(t *testing.T) {
			is := is.New(t)
			is.True(strings.Contains(get(h, "/purge").Body.String(), `name="older_than"`))
			body := get(h, "/purge?state=dead&older_than=1m").Body.String()
			is.True(strings.Contains(body, "Delete every dead job that finished before 2026-11-30 12:02:00Z"))
			is.Equal(state(t, q, ids.dead), lite.StateDead) // asking deletes nothing
		})

		t.Run("an unknown job or page is 404", func(t *testing.T) {
			is := is.New(t)
			is.Equal(get(h, "/jobs/999").Code, http.StatusNotFound)
			is.Equal(get(h, "/nothing").Code, http.StatusNotFound)
			is.Equal(get(h, "/jobs/x").Code, http.StatusBadRequest)
		})

		t.Run("the static files are served", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/static/app.js")
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "refresh"))
		})
	})
}

func TestFormActions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		h := handler(q, clock, web.Options{})

		t.Run("retry makes a dead job available and goes back to its page", func(t *testing.T) {
			is := is.New(t)
			w := post(h, fmt.Sprintf("/jobs/%d/retry", ids.dead), nil)
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(w.Header().Get("Location"), fmt.Sprintf("../../jobs/%d", ids.dead))
			is.Equal(state(t, q, ids.dead), lite.StateAvailable)
		})

		t.Run("an action on a job in the wrong state is 409 and changes nothing", func(t *testing.T) {
			is := is.New(t)
			w := post(h, fmt.Sprintf("/jobs/%d/release", ids.available), nil)
			is.Equal(w.Code, http.StatusConflict)
			is.True(strings.Contains(w.Body.String(), "invalid job state"))
			is.Equal(state(t, q, ids.available), lite.StateAvailable)
		})

		t.Run("release and cancel", func(t *testing.T) {
			is := is.New(t)
			is.Equal(post(h, fmt.Sprintf("/jobs/%d/release", ids.running), nil).Code, http.StatusSeeOther)
			is.Equal(state(t, q, ids.running), lite.StateAvailable)
			is.Equal(post(h, fmt.Sprintf("/jobs/%d/cancel", ids.running), nil).Code, http.StatusSeeOther)
			is.Equal(state(t, q, ids.running), lite.StateCancelled)
		})

		t.Run("purge deletes finished jobs older than asked", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/purge", url.Values{"state": {"cancelled"}, "older_than": {"1h"}})
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "Deleted 0 jobs")) // cancelled just now
			clock.Advance(time.Second)
			w = post(h, "/purge", url.Values{"state": {"cancelled"}, "older_than": {"0s"}})
			is.True(strings.Contains(w.Body.String(), "Deleted 1 jobs"))
			is.Equal(get(h, fmt.Sprintf("/jobs/%d", ids.running)).Code, http.StatusNotFound)
			is.Equal(post(h, "/purge", url.Values{"state": {"running"}, "older_than": {"0s"}}).Code, http.StatusBadRequest)
		})
	})
}

func TestAJobPageShowsItsWorkflow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{})
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
			Steps: []lite.Step{{Name: "fetch", Job: lite.NewJob{Kind: "fetch"}}, {Job: lite.NewJob{Kind: "<b>publish"}, After: []string{"fetch"}}},
			Batch: &lite.Callback{Kind: "report"},
		})
		is.NoErr(err)
		fetch, publish := wf.IDs[0], wf.IDs[1]

		body := get(h, fmt.Sprintf("/jobs/%d", publish)).Body.String()
		is.True(strings.Contains(body, `<span class="state blocked">blocked</span>`))
		is.True(strings.Contains(body, fmt.Sprintf(`<dd class="waits-for"><a href="../jobs/%d">%d</a> fetch <span class="state available">available</span>`, fetch, fetch)))
		is.True(strings.Contains(body, "1 not done; if one ends dead or cancelled: cancel"))
		is.True(strings.Contains(body, fmt.Sprintf(`<dd class="batch"><a href="../batches/%d">%d</a>: 0 done, 0 dead, 0 cancelled, 2 pending of 2</dd>`, wf.Batch, wf.Batch)))
		is.True(strings.Contains(body, "action=cancel")) // a blocked job can be cancelled

		body = get(h, fmt.Sprintf("/jobs/%d", fetch)).Body.String()
		is.True(strings.Contains(body, fmt.Sprintf(`<dd class="waited-by"><a href="../jobs/%d">%d</a>`, publish, publish)))
		is.True(strings.Contains(body, "&lt;b&gt;publish")) // a kind is escaped
	})
}
