package lite_test

import (
	"context"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestARunningWorkerFiresASchedule sets a schedule while a worker idles
// with its poll an hour away: the worker learns of it at once (in this
// process by the queue's own wake-up; from another connection by the WAL
// watch, or on PostgreSQL by the notification the schedules' trigger
// sends), fires it at its tick, and runs the job.
func TestARunningWorkerFiresASchedule(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, c := range []struct {
			name  string
			other bool
		}{{"set in this process", false}, {"set by another connection", true}} {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				q, dsn := e.mustOpen(t, nil)
				w, _, _ := testWorker(t, q, lite.WorkerOptions{PollInterval: time.Hour})
				idle := idleSignals(w)
				ran := make(chan *lite.Job, 10)
				w.Handle("tick", func(_ context.Context, j *lite.Job) error {
					ran <- j
					return nil
				})
				runWorker(t, w)
				recv(t, idle)

				setter := q
				if c.other {
					setter = mustOpenOpts(t, dsn, lite.Options{})
				}
				mustSetSchedule(t, setter, lite.Schedule{Name: "s", Spec: "@every 1s", Job: lite.NewJob{Kind: "tick"}})
				first := mustSchedule(t, q, "s").NextRunAt
				j := recv(t, ran) // why: with the poll an hour away, only a wake-up can have fired it
				is.True(j.RunAt.Equal(first))
				is.Equal(j.Kind, "tick")
			})
		}
	})
}

// TestAWorkerWithEverySlotBusyStillFires keeps a worker's only slot busy:
// its schedules still fire on time, their jobs waiting for a slot.
func TestAWorkerWithEverySlotBusyStillFires(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, nil)
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1, PollInterval: time.Hour})
		release := make(chan struct{})
		w.Handle("block", func(ctx context.Context, _ *lite.Job) error {
			<-release
			return nil
		})
		w.Handle("tick", func(context.Context, *lite.Job) error { return nil })
		mustEnqueue(t, q, lite.NewJob{Kind: "block"})
		runWorker(t, w)
		ev.await(t, lite.EventStarted)

		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@every 1s", Job: lite.NewJob{Kind: "tick"}})
		deadline := time.Now().Add(guard)
		for mustSchedule(t, q, "s").LastRunAt.IsZero() {
			if time.Now().After(deadline) {
				t.Fatal("the schedule never fired while the slot was busy")
			}
			time.Sleep(10 * time.Millisecond)
		}
		ticks, err := q.List(t.Context(), lite.ListFilter{Kind: "tick"})
		is.NoErr(err)
		is.True(len(ticks) >= 1)
		is.Equal(ticks[0].State, lite.StateAvailable) // enqueued, waiting for the busy slot
		close(release)
	})
}
