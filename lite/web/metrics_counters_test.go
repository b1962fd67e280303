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

// TestMetricsCountADurableHandlersStepsParksAndSignals: a handler that
// runs a step, awaits a signal, sleeps and runs a second step takes three
// attempts; each durable call is counted as what it was in that attempt.
func TestMetricsCountADurableHandlersStepsParksAndSignals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		h := handler(q, clock, web.Options{Metrics: metrics.Handler(q)})
		w, err := lite.NewWorker(q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"flows": {}}})
		is.NoErr(err)
		w.Handle("flow", func(ctx context.Context, _ *lite.Job) error {
			if _, err := lite.RunStep(ctx, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
				return err
			}
			if _, err := lite.AwaitSignal(ctx, "go", 0); err != nil {
				return err
			}
			if err := lite.Sleep(ctx, time.Hour); err != nil {
				return err
			}
			_, err := lite.RunStep(ctx, "b", func(context.Context) (int, error) { return 2, nil })
			return err
		})
		id := enqueue(t, q, lite.NewJob{Queue: "flows", Kind: "flow"})
		litetest.Drain(t, w) // a ran; parked awaiting the signal
		is.NoErr(q.Signal(t.Context(), id, "go", nil))
		litetest.Drain(t, w) // a replayed; the signal taken; parked asleep
		clock.Advance(time.Hour)
		litetest.Drain(t, w) // a replayed; b ran; done
		w.Wait()

		body := get(h, "/metrics").Body.String()
		for _, line := range []string{
			`lite_worker_events_total{event="step",queue="flows"} 2`,
			`lite_worker_events_total{event="step replayed",queue="flows"} 2`,
			`lite_worker_events_total{event="signal received",queue="flows"} 1`,
			`lite_worker_events_total{event="parked",queue="flows"} 2`,
			`lite_worker_events_total{event="done",queue="flows"} 1`,
			`lite_worker_parked_total{queue="flows",reason="signal"} 1`,
			`lite_worker_parked_total{queue="flows",reason="sleep"} 1`,
		} {
			if !strings.Contains(body, line+"\n") {
				t.Errorf("no line %s in\n%s", line, body)
			}
		}
	})
}
