package web_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/liteq/lite/lite/web/metrics"
	"github.com/matryer/is"
)

func TestMetrics(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		seed(t, q, clock)
		outcomes := metrics.NewOutcomes()
		w, err := lite.NewWorker(q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"emails": {}}, OnEvent: outcomes.OnEvent})
		is.NoErr(err)
		w.Handle("welcome", func(ctx context.Context, job *lite.Job) error { return errors.New("bounced") })
		w.Handle("nap", func(ctx context.Context, job *lite.Job) error { return lite.Sleep(ctx, time.Hour) })
		_, err = w.RunOnce(t.Context())
		is.NoErr(err)
		w.Wait()
		nap, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "emails", Kind: "nap"})
		is.NoErr(err)
		ev, err := w.RunJob(t.Context(), nap)
		is.NoErr(err)
		is.Equal(ev.Kind, lite.EventParked)
		is.NoErr(q.Pause(t.Context(), "emails"))
		is.NoErr(q.SetLimits(t.Context(), "reports", lite.Limits{MaxRunning: 3})) // a queue with settings and no job
		h := handler(q, clock, web.Options{Token: "s3cret", Metrics: metrics.Handler(q, outcomes)})

		is.Equal(get(h, "/metrics").Code, http.StatusUnauthorized) // behind the token too
		resp := do(h, request{method: http.MethodGet, target: "/metrics", header: map[string]string{"Authorization": "Bearer s3cret"}})
		is.Equal(resp.Code, http.StatusOK)
		body := resp.Body.String()
		for _, line := range []string{
			`lite_jobs{queue="emails",state="available"} 2`, // the welcome job, back to wait out its backoff, and the nap
			`lite_jobs_parked{queue="emails",reason="sleep"} 1`,
			`lite_jobs_parked{queue="emails",reason="signal"} 0`,
			`lite_jobs{queue="emails",state="running"} 1`,                // seed's, leased by worker-1
			`lite_oldest_ready_seconds{queue="emails"} 0`,                // its backoff has not passed
			`lite_worker_events_total{event="started",queue="emails"} 2`, // the welcome job and the nap
			`lite_worker_events_total{event="failed",queue="emails"} 1`,
			`lite_worker_events_total{event="parked",queue="emails"} 1`,
			`lite_queue_paused{queue="emails"} 1`,
			`lite_queue_paused{queue="reports"} 0`,
			`lite_queue_max_running{queue="reports"} 3`,
		} {
			is.True(strings.Contains(body, line+"\n")) // the line
		}
		is.True(!strings.Contains(body, `lite_queue_max_running{queue="emails"}`)) // no limit, no gauge
	})
}

// A queue name that is not UTF-8 cannot come from lite's enqueue, but
// other SQL can write one: it must neither crash the worker whose event
// names it nor blank the metrics.
func TestMetricsSurviveAQueueNameThatIsNotUTF8(t *testing.T) {
	is := is.New(t)
	q := litetest.Open(t)
	_, err := q.DB().ExecContext(t.Context(), `insert into lite_jobs (queue, kind, payload, run_at, max_attempts, created_at)
values (cast(x'62616462ff' as text), 'k', x'', 0, 3, 0)`)
	is.NoErr(err)
	outcomes := metrics.NewOutcomes()
	outcomes.OnEvent(lite.Event{Kind: lite.EventStarted, Job: &lite.Job{Queue: "bad\xff"}}) // no panic
	h := handler(q, litetest.NewClock(time.Now()), web.Options{Metrics: metrics.Handler(q, outcomes)})
	resp := get(h, "/metrics")
	is.Equal(resp.Code, http.StatusOK)
	body := resp.Body.String()
	is.True(strings.Contains(body, "lite_jobs{queue=\"badb\uFFFD\",state=\"available\"} 1\n"))
	is.True(strings.Contains(body, "lite_worker_events_total{event=\"started\",queue=\"bad\uFFFD\"} 1\n"))
}
