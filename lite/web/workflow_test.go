package web_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// batchOf enqueues a batch of n jobs of kind in queue, each of one
// attempt, whose callback is cb.
func batchOf(t *testing.T, q *lite.Queue, n int, queue, kind string, cb lite.Callback) lite.WorkflowIDs {
	t.Helper()
	steps := make([]lite.Step, n)
	for i := range steps {
		steps[i].Job = lite.NewJob{Queue: queue, Kind: kind, Payload: []byte(fmt.Sprintf(`{"page":%d}`, i)), MaxAttempts: 1}
	}
	wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: steps, Batch: &cb})
	if err != nil {
		t.Fatal(err)
	}
	return wf
}

// end leases the next job of queue and ends it: done, or dead (its one
// attempt failed with why).
func end(t *testing.T, q *lite.Queue, queue string, why error) int64 {
	t.Helper()
	leased, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{queue}, Max: 1, LockedBy: "worker-1"})
	if err != nil || len(leased) != 1 {
		t.Fatalf("lease: %v, %d jobs", err, len(leased))
	}
	if why == nil {
		err = q.AckDone(t.Context(), leased[0].Lease(), nil)
	} else {
		err = q.AckFailed(t.Context(), leased[0].Lease(), why)
	}
	if err != nil {
		t.Fatal(err)
	}
	return leased[0].ID
}

// rows counts the rows of the page's table of jobs.
func rows(body string) int { return strings.Count(body, "<tr>\n  <td><a href=") }

func TestABatchPageShowsItsProgressAndItsJobsByState(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		enqueue(t, q, lite.NewJob{Queue: "other", Kind: "convert"})
		wf := batchOf(t, q, 5, lite.DefaultQueue, "convert", lite.Callback{Queue: "reports", Kind: "report", Payload: []byte("q4")})
		dead := end(t, q, lite.DefaultQueue, errors.New("no such page"))
		end(t, q, lite.DefaultQueue, nil)
		h := handler(q, clock, web.Options{})
		page := fmt.Sprintf("/batches/%d", wf.Batch)

		t.Run("its counts, its state and its callback", func(t *testing.T) {
			is := is.New(t)
			w := get(h, page)
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.True(strings.Contains(body, `<span class="state pending">pending</span>`))
			is.True(strings.Contains(body, `<dd class="counts">5: <span class="done">1 done</span>, <span class="dead">1 dead</span>, <span class="cancelled">0 cancelled</span>, 3 pending</dd>`))
			is.True(strings.Contains(body, `<progress max="5" value="2"></progress> 2 of 5 ended`))
			is.True(strings.Contains(body, "report in queue reports, up to 10 attempts, payload <code>q4</code>; enqueued once the last job ends"))
		})

		t.Run("its jobs, each linked, and no other job", func(t *testing.T) {
			is := is.New(t)
			body := get(h, page).Body.String()
			is.Equal(rows(body), 5)
			for _, id := range wf.IDs {
				is.True(strings.Contains(body, fmt.Sprintf(`<td><a href="../jobs/%d">%d</a></td>`, id, id)))
			}
			is.True(!strings.Contains(body, `<td>other</td>`))
			is.True(strings.Contains(body, `<td class="error">no such page</td>`))
		})

		t.Run("by state", func(t *testing.T) {
			is := is.New(t)
			body := get(h, page+"?state=dead").Body.String()
			is.Equal(rows(body), 1)
			is.True(strings.Contains(body, fmt.Sprintf(`href="../jobs/%d"`, dead)))
			is.True(strings.Contains(body, fmt.Sprintf(`<a href="../batches/%d?state=dead" class="dead current">dead</a>`, wf.Batch)))
			is.Equal(rows(get(h, page+"?state=running").Body.String()), 0)
			is.Equal(get(h, page+"?state=lost").Code, http.StatusBadRequest)
		})

		t.Run("paged, newest first", func(t *testing.T) {
			is := is.New(t)
			body := get(h, page+"?limit=2").Body.String()
			is.Equal(rows(body), 2)
			next := fmt.Sprintf(`<a class="next" href="../batches/%d?before=%d&amp;limit=2">`, wf.Batch, wf.IDs[3])
			is.True(strings.Contains(body, next))
			body = get(h, fmt.Sprintf("%s?before=%d&limit=2", page, wf.IDs[3])).Body.String()
			is.Equal(rows(body), 2)
			is.True(strings.Contains(body, fmt.Sprintf(`href="../jobs/%d"`, wf.IDs[2])))
			is.True(strings.Contains(body, fmt.Sprintf(`<a class="first" href="../batches/%d?limit=2">`, wf.Batch)))
			body = get(h, fmt.Sprintf("%s?before=%d&limit=2", page, wf.IDs[1])).Body.String()
			is.Equal(rows(body), 1)
			is.True(!strings.Contains(body, `class="next"`)) // the last page
		})

		t.Run("a job of the batch links to it, and to its graph only with dependencies", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d", dead)).Body.String()
			is.True(strings.Contains(body, fmt.Sprintf(`<dd class="batch"><a href="../batches/%d">%d</a>: 1 done, 1 dead, 0 cancelled, 3 pending of 5</dd>`, wf.Batch, wf.Batch)))
			is.True(!strings.Contains(body, `class="graph"`))
		})

		t.Run("the jobs list of a batch offers no action on all it matches", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs?batch=%d", wf.Batch)).Body.String()
			is.Equal(rows(body), 0) // its rows start with a checkbox
			is.Equal(strings.Count(body, `name="id" value=`), 5)
			is.True(strings.Contains(body, fmt.Sprintf(`<input type="hidden" name="batch" value="%d">`, wf.Batch)))
			is.True(strings.Contains(body, `<button name="do" value="retry">`))
			is.True(!strings.Contains(body, "retry-all")) // bulk actions take no batch filter: all would be every job
		})

		t.Run("a finished batch says so", func(t *testing.T) {
			is := is.New(t)
			for range 3 {
				end(t, q, lite.DefaultQueue, nil)
			}
			body := get(h, page).Body.String()
			is.True(strings.Contains(body, `<span class="state finished">finished</span>`))
			is.True(strings.Contains(body, "enqueued when the last job ended"))
			is.True(strings.Contains(body, "4 done"))
		})

		t.Run("an unknown or malformed batch is refused", func(t *testing.T) {
			is := is.New(t)
			is.Equal(get(h, "/batches/999").Code, http.StatusNotFound)
			w := get(h, "/batches/x")
			is.Equal(w.Code, http.StatusBadRequest)
			is.True(strings.Contains(w.Body.String(), "batch id must be a positive number"))
			is.Equal(get(h, page+"?limit=1001").Code, http.StatusBadRequest)
		})
	})
}

func TestABatchPageIsBoundedWhateverTheBatchHolds(t *testing.T) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
		is := is.New(t)
		clock := litetest.NewClock(start)
		q, _ := e.Open(t, lite.Options{Now: clock.Now, Synchronous: lite.SyncNormal})
		wf := batchOf(t, q, 1500, lite.DefaultQueue, "convert", lite.Callback{Kind: "report"})
		h := handler(q, clock, web.Options{})
		body := get(h, fmt.Sprintf("/batches/%d", wf.Batch)).Body.String()
		is.Equal(rows(body), 100) // a page
		is.True(strings.Contains(body, "1500: "))
		is.True(strings.Contains(body, fmt.Sprintf(`?before=%d">Next page</a>`, wf.IDs[1400])))
	})
}

func TestAGraphPageShowsTheJobsByLayer(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
			{Name: "fetch", Job: lite.NewJob{Kind: "fetch"}},
			{Name: "small", Job: lite.NewJob{Kind: "resize"}, After: []string{"fetch"}},
			{Name: "large", Job: lite.NewJob{Kind: "resize"}, After: []string{"fetch"}},
			{Name: "publish", Job: lite.NewJob{Kind: "publish"}, After: []string{"small", "large"}},
			{Job: lite.NewJob{Kind: "audit"}, After: []string{"publish"}},
		}})
		is.New(t).NoErr(err)
		ids := wf.IDs
		enqueue(t, q, lite.NewJob{Kind: "apart"})
		h := handler(q, clock, web.Options{})

		t.Run("the job page links to its graph", func(t *testing.T) {
			body := get(h, fmt.Sprintf("/jobs/%d", ids[1])).Body.String()
			is.New(t).True(strings.Contains(body, fmt.Sprintf(`<a class="graph" href="../jobs/%d/graph">`, ids[1])))
		})

		t.Run("a row per layer, each job with its state, and the edges", func(t *testing.T) {
			is := is.New(t)
			w := get(h, fmt.Sprintf("/jobs/%d/graph", ids[1]))
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.Equal(strings.Count(body, `<ol class="layer"`), 4)
			is.Equal(strings.Count(body, `<li class="node `), 5) // not the job apart
			is.True(strings.Contains(body, `5 jobs connected through dependencies: <span class="available">1 available</span> <span class="blocked">4 blocked</span>`))
			is.True(strings.Contains(body, fmt.Sprintf(`<li class="node blocked root"><a href="../../jobs/%d">%d</a> resize`, ids[1], ids[1])))
			layer1 := body[strings.Index(body, `aria-label="layer 1"`):strings.Index(body, `aria-label="layer 2"`)]
			is.Equal(strings.Count(layer1, `<li class="node`), 2) // small and large
			is.True(strings.Contains(body, fmt.Sprintf(`<td class="waits-for"><a href="../../jobs/%d">%d</a> <a href="../../jobs/%d">%d</a> </td>`, ids[1], ids[1], ids[2], ids[2])))
			is.True(!strings.Contains(body, "Graph truncated"))
		})

		t.Run("a limit truncates it, and says so", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d/graph?limit=2", ids[4])).Body.String()
			is.Equal(strings.Count(body, `<li class="node `), 2)
			is.True(strings.Contains(body, fmt.Sprintf("Graph truncated: only the 2 jobs nearest job %d are shown", ids[4])))
			is.True(strings.Contains(body, `blocked</span> <span class="more">more</span></li>`)) // publish
		})

		t.Run("a bad limit or job is refused", func(t *testing.T) {
			is := is.New(t)
			for _, limit := range []string{"0", "10001", "x"} {
				is.Equal(get(h, fmt.Sprintf("/jobs/%d/graph?limit=%s", ids[0], limit)).Code, http.StatusBadRequest)
			}
			is.Equal(get(h, "/jobs/999/graph").Code, http.StatusNotFound)
			is.Equal(get(h, "/jobs/x/graph").Code, http.StatusBadRequest)
		})

		t.Run("the API serves the graph", func(t *testing.T) {
			is := is.New(t)
			var g struct {
				Jobs []struct {
					ID       int64
					State    lite.State
					Layer    int
					WaitsFor []int64 `json:"waits_for"`
					More     bool
				}
				Truncated bool
			}
			w := get(h, fmt.Sprintf("/api/jobs/%d/graph", ids[0]))
			is.Equal(w.Code, http.StatusOK)
			decode(t, w.Body.Bytes(), &g)
			is.Equal(len(g.Jobs), 5)
			is.Equal(g.Jobs[3].ID, ids[3])
			is.Equal(g.Jobs[3].WaitsFor, []int64{ids[1], ids[2]})
			is.Equal(g.Jobs[3].Layer, 2)
			is.True(!g.Truncated)
			decode(t, get(h, fmt.Sprintf("/api/jobs/%d/graph?limit=1", ids[0])).Body.Bytes(), &g)
			is.Equal(len(g.Jobs), 1)
			is.True(g.Truncated && g.Jobs[0].More)
			w = get(h, "/api/jobs/999/graph")
			is.Equal(w.Code, http.StatusNotFound)
			is.Equal(apiError(t, w.Body.Bytes()), "graph of job 999: job not found")
			w = get(h, fmt.Sprintf("/api/jobs/%d/graph?limit=0", ids[0]))
			is.Equal(w.Code, http.StatusBadRequest)
			is.Equal(apiError(t, w.Body.Bytes()), `limit must be 1 to 10000, not "0"`)
		})
	})
}

func TestTheAPIServesABatchWithItsJobs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		enqueue(t, q, lite.NewJob{Kind: "convert"})
		wf := batchOf(t, q, 3, lite.DefaultQueue, "convert", lite.Callback{Kind: "report", Payload: []byte{0xff}})
		h := handler(q, clock, web.Options{})
		var b struct {
			Total    int
			Callback struct {
				Kind          string
				PayloadBase64 []byte `json:"payload_base64"`
			}
		}
		decode(t, get(h, fmt.Sprintf("/api/batches/%d", wf.Batch)).Body.Bytes(), &b)
		is.Equal(b.Total, 3)
		is.Equal(b.Callback.Kind, "report")
		is.Equal(b.Callback.PayloadBase64, []byte{0xff}) // not UTF-8: base64, as a job's payload
		var page struct {
			Jobs []lite.Job
			Next int64
		}
		decode(t, get(h, fmt.Sprintf("/api/jobs?batch=%d&limit=2", wf.Batch)).Body.Bytes(), &page)
		is.Equal([]int64{page.Jobs[0].ID, page.Jobs[1].ID}, []int64{wf.IDs[2], wf.IDs[1]})
		is.Equal(page.Next, wf.IDs[1])
		decode(t, get(h, fmt.Sprintf("/api/jobs?batch=%d&before=%d", wf.Batch, page.Next)).Body.Bytes(), &page)
		is.Equal(len(page.Jobs), 1)
		is.Equal(page.Jobs[0].ID, wf.IDs[0])
		w := get(h, "/api/jobs?batch=0")
		is.Equal(w.Code, http.StatusBadRequest)
		is.Equal(apiError(t, w.Body.Bytes()), `batch must be a batch id, not "0"`)
		w = get(h, "/api/batches/x")
		is.Equal(apiError(t, w.Body.Bytes()), `batch id must be a positive number, not "x"`)
	})
}

func TestWorkflowPagesShowHostileFieldsAsText(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
			Steps: []lite.Step{
				{Name: "a", Job: lite.NewJob{Queue: hostileQueue, Kind: hostileName, Payload: []byte(hostile)}},
				{Job: lite.NewJob{Queue: hostileQueue, Kind: hostileName}, After: []string{"a"}},
			},
			Batch: &lite.Callback{Kind: hostileName, Payload: []byte(hostile)},
		})
		is.New(t).NoErr(err)
		toHostileQueue(t, q)
		leased, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{hostileName}, Max: 1, LockedBy: hostile})
		is.New(t).NoErr(err)
		is.New(t).NoErr(q.AckFailed(t.Context(), leased[0].Lease(), errors.New(hostile)))
		shown := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;javascript:alert(3)"
		for _, opts := range []web.Options{{}, {ReadOnly: true}} {
			h := handler(q, clock, opts)
			for _, page := range []string{
				fmt.Sprintf("/batches/%d", wf.Batch), fmt.Sprintf("/batches/%d?state=available", wf.Batch),
				fmt.Sprintf("/jobs/%d/graph", wf.IDs[1]), fmt.Sprintf("/jobs?batch=%d", wf.Batch),
			} {
				t.Run(fmt.Sprintf("%s, read-only %t", page, opts.ReadOnly), func(t *testing.T) {
					is := is.New(t)
					body := hostilePage(t, h, page)
					is.True(strings.Contains(body, shown)) // shown, as text
					if strings.HasPrefix(page, "/jobs?") {
						is.Equal(strings.Contains(body, `name="do"`), !opts.ReadOnly) // bulk actions, in read-only mode none
					}
				})
			}
		}
		t.Run("the callback's payload is escaped on the batch page", func(t *testing.T) {
			body := get(handler(q, clock, web.Options{}), fmt.Sprintf("/batches/%d", wf.Batch)).Body.String()
			is.New(t).True(strings.Contains(body, "payload <code>&lt;script&gt;alert(1)&lt;/script&gt;")) // the start, as a preview
		})
	})
}
