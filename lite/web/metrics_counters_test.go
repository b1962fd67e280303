package web_test

import (
	"context"
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

func TestMetricsCountOutcomesThatSurviveRetention(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		seed(t, q, clock) // a dead job, a running one and an available one in emails
		h := handler(q, clock, web.Options{Metrics: metrics.Handler(q)})
		// why: made after the handler, without OnEvent; its events count all the same
		w, err := lite.NewWorker(q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"emails": {}}})
		is.NoErr(err)
		w.Handle("welcome", func(context.Context, *lite.Job) error { return nil })
		_, err = w.RunOnce(t.Context())
		is.NoErr(err)
		w.Wait()
		enqueue(t, q, lite.NewJob{Queue: "reports"})
		is.NoErr(q.Cancel(t.Context(), 4))
		_, err = q.Purge(t.Context(), clock.Now().Add(time.Hour))
		is.NoErr(err)

		resp := get(h, "/metrics")
		is.Equal(resp.Code, http.StatusOK)
		body := resp.Body.String()
		for _, line := range []string{
			`lite_jobs_outcomes_total{outcome="done",queue="emails"} 1`, // the welcome job, purged since
			`lite_jobs_outcomes_total{outcome="dead",queue="emails"} 1`, // seed's, purged since
			`lite_jobs_outcomes_total{outcome="cancelled",queue="reports"} 1`,
			`lite_jobs_outcomes_total{outcome="retried",queue="reports"} 0`,
			`lite_jobs{queue="reports",state="available"} 0`, // empty, and still there
			`lite_queue_paused{queue="reports"} 0`,
			`lite_worker_events_total{event="done",queue="emails"} 1`,
		} {
			if !strings.Contains(body, line+"\n") {
				t.Errorf("no line %s in\n%s", line, body)
			}
		}
	})
}
