package lite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestUnhandledShowsReadyJobsNoLiveWorkerTakes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "deliver"})
		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "delivr"}) // the typo
		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "delivr"})
		mustEnqueue(t, q, lite.NewJob{Queue: "mail", Kind: "deliver"})
		mustEnqueue(t, q, lite.NewJob{Queue: "mail", Kind: "later", Delay: time.Hour}) // not due: nobody owes it anything yet
		mustEnqueue(t, q, lite.NewJob{Queue: "any", Kind: "x"})

		is.NoErr(lite.Announce(ctx, q, "w1", []string{"hooks"}, []string{"deliver"}, time.Minute))
		is.NoErr(lite.Announce(ctx, q, "w2", []string{"any"}, nil, time.Minute)) // every kind of its queue
		clock.Advance(30 * time.Second)
		got, err := q.Unhandled(ctx)
		is.NoErr(err)
		is.Equal(len(got), 2)
		is.Equal([3]any{got[0].Queue, got[0].Kind, got[0].Count}, [3]any{"hooks", "delivr", int64(2)})
		is.Equal(got[0].OldestReady, 30*time.Second)
		is.Equal([3]any{got[1].Queue, got[1].Kind, got[1].Count}, [3]any{"mail", "deliver", int64(1)})

		workers, err := q.Workers(ctx)
		is.NoErr(err)
		is.Equal(len(workers), 2)
		is.Equal(workers[0].Identity, "w1")
		is.Equal(workers[0].Kinds, []string{"deliver"})
		is.Equal(workers[1].Kinds, []string{})

		// A worker that stopped renewing its row past its stale-after takes
		// nothing any more.
		clock.Advance(31 * time.Second)
		got, err = q.Unhandled(ctx)
		is.NoErr(err)
		is.Equal(len(got), 4)
		workers, err = q.Workers(ctx)
		is.NoErr(err)
		is.Equal(len(workers), 0)

		// Every worker serving every queue with every kind takes them all.
		is.NoErr(lite.Announce(ctx, q, "w3", nil, nil, time.Minute))
		got, err = q.Unhandled(ctx)
		is.NoErr(err)
		is.Equal(len(got), 0)
	})
}

func TestARunningWorkerAnnouncesItselfUntilItStops(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		w, _, _ := testWorker(t, q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"hooks": {Concurrency: 3}}})
		w.Handle("deliver", func(context.Context, *lite.Job) error { return nil })
		slept := make(chan struct{}, 1)
		lite.SetIdleHook(w, func() {
			select {
			case slept <- struct{}{}:
			default:
			}
		})
		stop := runWorker(t, w)
		recv(t, slept)
		workers, err := q.Workers(t.Context())
		is.NoErr(err)
		is.Equal(len(workers), 1)
		is.Equal(workers[0].Queues, []string{"hooks"})
		is.Equal(workers[0].Kinds, []string{"deliver"})
		is.Equal(workers[0].Slots, 3) // its queues' slots together

		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "delivr"})
		got, err := q.Unhandled(t.Context())
		is.NoErr(err)
		is.Equal(len(got), 1) // its own kind is taken, the typo is not

		stop()
		workers, err = q.Workers(t.Context())
		is.NoErr(err)
		is.Equal(len(workers), 0) // a clean stop removes its row at once
	})
}

func TestAWorkerWarnsOfJobsNoWorkerTakes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		w, _, logs := testWorker(t, q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"hooks": {}}})
		is.NoErr(lite.Announce(ctx, q, "me", []string{"hooks"}, []string{"deliver"}, 24*time.Hour))
		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "deliver"})
		mustEnqueue(t, q, lite.NewJob{Queue: "hooks", Kind: "delivr"})
		mustEnqueue(t, q, lite.NewJob{Queue: "elsewhere", Kind: "delivr"}) // not this worker's queue
		warned := map[[2]string]time.Time{}
		warnings := func() int { return strings.Count(logs.String(), "no running worker takes") }

		lite.WarnUnhandled(ctx, w, warned)
		is.Equal(warnings(), 0) // due only just now: another worker may be starting

		clock.Advance(2 * time.Minute)
		lite.WarnUnhandled(ctx, w, warned)
		is.Equal(warnings(), 1)
		is.True(strings.Contains(logs.String(), "kind=delivr"))
		is.True(!strings.Contains(logs.String(), "queue=elsewhere"))

		clock.Advance(10 * time.Minute)
		lite.WarnUnhandled(ctx, w, warned)
		is.Equal(warnings(), 1) // not again every minute

		clock.Advance(time.Hour)
		lite.WarnUnhandled(ctx, w, warned)
		is.Equal(warnings(), 2) // but again while they keep waiting
	})
}
