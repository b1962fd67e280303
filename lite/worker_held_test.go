package lite_test

import (
	"context"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestRateHeldNamesTheQueuesARateWindowHoldsBack(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		setup := func(t *testing.T, opts lite.WorkerOptions) (*lite.Queue, *fakeClock, *lite.Worker) {
			t.Helper()
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			if err := q.SetLimits(t.Context(), "mail", lite.Limits{Rate: 2, Per: time.Minute}); err != nil {
				t.Fatal(err)
			}
			w, _, _ := testWorker(t, q, opts)
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			return q, clock, w
		}

		t.Run("a queue that spent its window with jobs ready is held until the window's end", func(t *testing.T) {
			is := is.New(t)
			q, clock, w := setup(t, lite.WorkerOptions{})
			for range 3 {
				mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
			}
			opened := clock.Now()
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep.Done, 2)
			held, err := w.RateHeld(t.Context())
			is.NoErr(err)
			is.Equal(len(held), 1)
			is.True(held[0].OpensAt.Equal(opened.Add(time.Minute)))
			held[0].OpensAt = time.Time{}
			is.Equal(held[0], lite.RateHold{Queue: "mail", Rate: 2, Per: time.Minute})
			clock.Advance(time.Minute)
			held, err = w.RateHeld(t.Context())
			is.NoErr(err)
			is.Equal(len(held), 0) // the next window is open
		})

		t.Run("a job not due yet is not held by the window", func(t *testing.T) {
			is := is.New(t)
			q, _, w := setup(t, lite.WorkerOptions{})
			mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
			mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
			mustEnqueue(t, q, lite.NewJob{Queue: "mail", Delay: time.Hour})
			_, err := w.RunOnce(t.Context())
			is.NoErr(err)
			held, err := w.RateHeld(t.Context())
			is.NoErr(err)
			is.Equal(len(held), 0)
		})

		t.Run("a queue the worker does not serve is not its hold", func(t *testing.T) {
			is := is.New(t)
			q, _, _ := setup(t, lite.WorkerOptions{})
			for range 3 {
				mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
			}
			all, _, _ := testWorker(t, q, lite.WorkerOptions{})
			all.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			_, err := all.RunOnce(t.Context())
			is.NoErr(err)
			other, _, _ := testWorker(t, q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"img": {}}})
			other.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			held, err := other.RateHeld(t.Context())
			is.NoErr(err)
			is.Equal(len(held), 0)
		})
	})
}
