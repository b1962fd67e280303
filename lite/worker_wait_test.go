package lite_test

import (
	"context"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestWorkerWaitReturnsOnceRunHasReturnedAndItsAcksSettled(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			cancel() // Run shuts down once this run's ack is written
			return nil
		})
		idle := idleSignals(w)
		ran := make(chan error, 1)
		go func() { ran <- w.Run(ctx) }()
		recv(t, idle) // Run is under way, and has started no handler yet
		enqueued := make(chan error, 1)
		go func() {
			_, err := q.Enqueue(t.Context(), lite.NewJob{})
			enqueued <- err
		}()
		w.Wait()
		// why: a worker runs one Run or RunOnce at a time, so this one
		// starting says the Run before it has returned
		_, err := w.RunOnce(t.Context())
		is.NoErr(err)
		var done int
		for _, seen := range ev.seen() {
			if seen.Kind == lite.EventDone {
				done++
			}
		}
		is.Equal(done, 1) // the job's ack was settled and told before Wait returned
		is.NoErr(<-enqueued)
		is.NoErr(recv(t, ran))
	})
}
