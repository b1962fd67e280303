package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// worker is a worker on q with handlers, each for the kind it is keyed by.
func worker(t *testing.T, q *lite.Queue, handlers map[string]lite.Handler) *lite.Worker {
	t.Helper()
	w, err := lite.NewWorker(q, lite.WorkerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for kind, h := range handlers {
		w.Handle(kind, h)
	}
	return w
}

// pipeline is a durable handler that records every kind of record: a
// step, a sleep of an hour, a wait for the signal approved (no timeout),
// a child enqueued in a step and an await of it.
func pipeline(q *lite.Queue) lite.Handler {
	return func(ctx context.Context, _ *lite.Job) error {
		if _, err := lite.RunStep(ctx, "charge", func(context.Context) (string, error) { return "receipt 7", nil }); err != nil {
			return err
		}
		if err := lite.Sleep(ctx, time.Hour); err != nil {
			return err
		}
		if _, err := lite.AwaitSignal(ctx, "approved", 0); err != nil {
			return err
		}
		ids, err := lite.RunStep(ctx, "children", func(ctx context.Context) ([]int64, error) {
			id, err := q.Enqueue(ctx, lite.NewJob{Kind: "child"})
			return []int64{id}, err
		})
		if err != nil {
			return err
		}
		_, err = lite.Await(ctx, ids...)
		return err
	}
}

// jobPage is the body of the handler's page for job id, which must answer 200.
func jobPage(t *testing.T, h http.Handler, id int64) string {
	t.Helper()
	w := get(h, fmt.Sprintf("/jobs/%d", id))
	if w.Code != http.StatusOK {
		t.Fatalf("job %d's page: %d %s", id, w.Code, w.Body)
	}
	return w.Body.String()
}

// contains checks that body holds each of want.
func contains(t *testing.T, body string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

// parkedAwaitingApproval enqueues a pipeline job and runs it, past its
// sleep, to its wait for the signal approved; it returns the job's id.
func parkedAwaitingApproval(t *testing.T, q *lite.Queue, clock *litetest.Clock) int64 {
	t.Helper()
	w := worker(t, q, map[string]lite.Handler{"pipeline": pipeline(q)})
	id := enqueue(t, q, lite.NewJob{Kind: "pipeline"})
	litetest.Drain(t, w)
	clock.Advance(time.Hour)
	litetest.Drain(t, w)
	return id
}

// hostileShown is hostile as a page shows it: escaped for HTML, its
// control and format characters as Go escapes.
const hostileShown = "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;javascript:alert(3)\\x1b[2J\\u202e"

func TestAJobsPageShowsItsDurableRecord(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{})
		parent := worker(t, q, map[string]lite.Handler{"pipeline": pipeline(q)})
		children := worker(t, q, map[string]lite.Handler{"child": func(context.Context, *lite.Job) error { return nil }})
		id := enqueue(t, q, lite.NewJob{Kind: "pipeline"})

		litetest.Drain(t, parent) // to its sleep
		body := jobPage(t, h, id)
		contains(t, body,
			`<span class="state parked">sleeping</span>`,
			`<dd class="parked">sleeping until 2026-11-30 13:00:00Z (in 1h0m0s)</dd>`,
			`<td><code>charge</code></td><td><code class="preview">&#34;receipt 7&#34;</code></td>`,
			`<td><code>lite:sleep#1</code></td><td>sleep until 2026-11-30 13:00:00Z (in 1h0m0s) </td>`)
		is.True(strings.Contains(get(h, "/jobs").Body.String(), `<td class="parked">sleeping</td>`)) // the jobs page too

		clock.Advance(time.Hour)
		body = jobPage(t, h, id)
		contains(t, body, `sleeping until 2026-11-30 13:00:00Z (0s ago); its time has come, a worker takes it next</dd>`)
		is.True(!strings.Contains(body, `<span class="state parked">`)) // ready: no longer shown as sleeping

		litetest.Drain(t, parent) // to its wait for the signal
		body = jobPage(t, h, id)
		contains(t, body,
			`<span class="state parked">awaiting</span>`,
			`<dd class="parked">awaiting signal approved, no timeout</dd>`,
			`<td><code>lite:signal:approved#1</code></td><td>wait for signal approved, no timeout </td>`)

		is.NoErr(q.Signal(t.Context(), id, "approved", []byte("ok by ada")))

		litetest.Drain(t, parent) // gets the signal, enqueues its child and awaits it
		body = jobPage(t, h, id)
		contains(t, body,
			`<td><code>lite:signal:approved#1:got</code></td><td>got signal approved: <code class="preview">ok by ada</code></td>`,
			`<dd class="parked">awaiting the jobs it waits for (see Workflow)</dd>`,
			`<dt>Waits for</dt>`) // which lists them

		litetest.Drain(t, children)
		litetest.Drain(t, parent)
		is.Equal(state(t, q, id), lite.StateDone)
		body = jobPage(t, h, id)
		child := id + 1
		contains(t, body,
			fmt.Sprintf(`<td><code>lite:await#1</code></td><td>awaited 1 job, ended: <a href="../jobs/%d">%d</a> child <span class="state done">done</span> </td>`, child, child))
		is.True(!strings.Contains(body, `<dt>Parked</dt>`))
	})
}

func TestAWaitThatTimedOutSaysSo(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{})
		w := worker(t, q, map[string]lite.Handler{"impatient": func(ctx context.Context, _ *lite.Job) error {
			_, err := lite.AwaitSignal(ctx, "approved", time.Minute)
			if errors.Is(err, lite.ErrSignalTimeout) {
				return nil
			}
			return err
		}})
		id := enqueue(t, q, lite.NewJob{Kind: "impatient"})
		litetest.Drain(t, w)
		contains(t, jobPage(t, h, id),
			`<dd class="parked">awaiting signal approved, timeout at 2026-11-30 12:01:00Z (in 1m0s)</dd>`,
			`<td>wait for signal approved, timeout at 2026-11-30 12:01:00Z (in 1m0s) </td>`)
		clock.Advance(2 * time.Minute)
		litetest.Drain(t, w)
		is.Equal(state(t, q, id), lite.StateDone)
		contains(t, jobPage(t, h, id), `<td><code>lite:signal:approved#1:got</code></td><td>no signal approved before its timeout </td>`)
	})
}

// hostileFirst is hostile text whose control and format characters come
// first, where a preview cut to a row's length keeps them.
const hostileFirst = "\x1b[2J\u202e" + hostileName

// hostileFirstShown is the start of hostileFirst as a preview shows it.
const hostileFirstShown = `\x1b[2J\u202e&lt;script&gt;alert(1)`

// hostileSteps is a handler that records a step whose name and result
// are hostile, raw (as `lite step` records a command's stdout), and
// awaits a signal whose name is hostile.
func hostileSteps(q *lite.Queue) lite.Handler {
	return func(ctx context.Context, j *lite.Job) error {
		if _, err := q.RecordStep(ctx, j.Lease(), hostile, []byte(hostileFirst)); err != nil {
			return err
		}
		_, err := lite.AwaitSignal(ctx, hostile, 0)
		return err
	}
}

func TestHostileStepsShowAsText(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		w := worker(t, q, map[string]lite.Handler{"hostile": hostileSteps(q)})
		id := enqueue(t, q, lite.NewJob{Kind: "hostile"})
		litetest.Drain(t, w) // parked awaiting the hostile signal
		page := fmt.Sprintf("/jobs/%d", id)

		t.Run("a parked job's step, its wait and its marker are text", func(t *testing.T) {
			is := is.New(t)
			body := hostilePage(t, h, page)
			is.Equal(strings.Count(body, "<code>"+hostileShown+"</code>"), 1)                          // the step's name
			is.Equal(strings.Count(body, `<code class="preview">`+hostileFirstShown), 1)               // its result, cut
			is.Equal(strings.Count(body, "<code>lite:signal:"+hostileShown+"#1</code>"), 1)            // the wait's record
			is.Equal(strings.Count(body, "<td>wait for signal "+hostileShown+", no timeout </td>"), 1) // what it is
			is.Equal(strings.Count(body, `<dd class="parked">awaiting signal `+hostileShown+", no timeout</dd>"), 1)
		})

		t.Run("what the wait got is text", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(q.Signal(t.Context(), id, hostile, []byte(hostileFirst)))
			litetest.Drain(t, w)
			body := hostilePage(t, h, page)
			is.Equal(strings.Count(body, "<td>got signal "+hostileShown+`: <code class="preview">`+hostileFirstShown), 1)
		})

		t.Run("a shell command's park for a hostile signal is text", func(t *testing.T) {
			is := is.New(t)
			w := worker(t, q, map[string]lite.Handler{"hostile-shell": func(ctx context.Context, j *lite.Job) error {
				_, err := q.AwaitSignalLease(ctx, j.Lease(), hostile, 0) // lite await-signal's
				return err
			}})
			id := enqueue(t, q, lite.NewJob{Kind: "hostile-shell"})
			litetest.Drain(t, w)
			body := hostilePage(t, h, fmt.Sprintf("/jobs/%d", id))
			is.Equal(strings.Count(body, "<td>the run&#39;s command asked to park it: await signal "+hostileShown+", no timeout </td>"), 1)
		})
	})
}

func TestAShellCommandsRecordsSayWhatTheyAre(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		w := worker(t, q, map[string]lite.Handler{"script": func(ctx context.Context, j *lite.Job) error {
			return q.SleepLease(ctx, j.Lease(), "nap", time.Hour) // lite sleep --name nap 1h
		}})
		id := enqueue(t, q, lite.NewJob{Kind: "script"})
		litetest.Drain(t, w)
		contains(t, jobPage(t, h, id),
			`<td><code>lite:sleep:nap</code></td><td>sleep until 2026-11-30 13:00:00Z (in 1h0m0s) </td>`,
			`<td><code>lite:park@1</code></td><td>the run&#39;s command asked to park it: sleep until 2026-11-30 13:00:00Z (in 1h0m0s) </td>`,
			`<dd class="parked">sleeping until 2026-11-30 13:00:00Z (in 1h0m0s)</dd>`)
	})
}

func TestTheAPIGivesAJobsStepsAndParkedMarker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{})
		id := parkedAwaitingApproval(t, q, clock)
		w := get(h, fmt.Sprintf("/api/jobs/%d", id))
		is.Equal(w.Code, http.StatusOK)
		var j lite.Job
		decode(t, w.Body.Bytes(), &j)
		is.Equal([]string{j.Parked, j.ParkedOn}, []string{lite.ParkedSignal, "approved"})
		steps, err := q.Steps(t.Context(), id)
		is.NoErr(err)
		is.Equal(len(steps), 3) // charge, the sleep, the wait
		is.Equal(len(j.Steps), len(steps))
		for i, s := range steps {
			got := j.Steps[i]
			is.Equal([]any{got.Name, got.Generation, string(got.Result)}, []any{s.Name, s.Generation, string(s.Result)})
			is.True(got.RecordedAt.Equal(s.RecordedAt))
		}
		var raw struct{ Steps []map[string]any }
		decode(t, w.Body.Bytes(), &raw)
		is.Equal(raw.Steps[0]["name"], "charge")
		is.Equal(raw.Steps[0]["result"], `"receipt 7"`) // text, as lite show --json gives it
		is.Equal(raw.Steps[0]["generation"], float64(1))
		is.Equal(raw.Steps[1]["name"], "lite:sleep#1")
	})
}
