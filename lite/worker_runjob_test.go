package lite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestRunJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// setup opens a queue on a fake clock and a worker for kind "a" whose
		// handler records each call and sets a result.
		setup := func(t *testing.T) (*lite.Queue, *fakeClock, *lite.Worker, *atomic.Int32) {
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			var calls atomic.Int32
			w.Handle("a", func(ctx context.Context, job *lite.Job) error {
				calls.Add(1)
				lite.SetResult(ctx, []byte("ran"))
				return nil
			})
			return q, clock, w, &calls
		}

		t.Run("an available job runs and its ending event is returned", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			ev, err := w.RunJob(t.Context(), id)
			is.NoErr(err)
			is.Equal(ev.Kind, lite.EventDone)
			is.Equal(ev.JobID, id)
			is.Equal(ev.Generation, int64(1))
			is.Equal(calls.Load(), int32(1))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateDone)
			is.Equal(string(j.Result), "ran")
			is.Equal(j.Attempts, 1)
		})

		t.Run("a job scheduled in the future runs now", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a", Delay: time.Hour})
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep.Leased, 0) // why: the loop's lease would not take it yet
			ev, err := w.RunJob(t.Context(), id)
			is.NoErr(err)
			is.Equal(ev.Kind, lite.EventDone)
			is.Equal(calls.Load(), int32(1))
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		})

		t.Run("a running job is refused and left to its owner", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "a"})
			held := mustLeaseOne(t, q, "q")
			_, err := w.RunJob(t.Context(), id)
			is.True(errors.Is(err, lite.ErrInvalidState))
			is.True(strings.Contains(err.Error(), "it is running")) // says why
			is.Equal(calls.Load(), int32(0))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateRunning)
			is.Equal(j.Generation, held.Generation) // the owner's lease still holds
			is.NoErr(q.AckDone(t.Context(), held.Lease(), nil))
		})

		t.Run("a finished job is refused and left as it was", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			_, err := w.RunJob(t.Context(), id)
			is.NoErr(err)
			_, err = w.RunJob(t.Context(), id)
			is.True(errors.Is(err, lite.ErrInvalidState))
			is.True(strings.Contains(err.Error(), "it is done"))
			is.Equal(calls.Load(), int32(1)) // run once, not twice
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateDone)
			is.Equal(j.Generation, int64(1))
			is.Equal(j.Attempts, 1)
		})

		t.Run("an unknown id is not found", func(t *testing.T) {
			is := is.New(t)
			_, _, w, calls := setup(t)
			_, err := w.RunJob(t.Context(), 42)
			is.True(errors.Is(err, lite.ErrNotFound))
			is.True(strings.Contains(err.Error(), "run job 42"))
			is.Equal(calls.Load(), int32(0))
		})

		t.Run("a kind without a handler is refused by name and left as it was", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{Kind: `b"q`})
			_, err := w.RunJob(t.Context(), id)
			is.True(err != nil)
			is.True(!errors.Is(err, lite.ErrInvalidState))
			is.True(strings.Contains(err.Error(), `no handler for its kind "b\"q"`)) // named, and quoted
			is.Equal(calls.Load(), int32(0))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Generation, int64(0))
			is.Equal(j.Attempts, 0)
		})

		t.Run("a worker for every kind runs any kind", func(t *testing.T) {
			is := is.New(t)
			q, _ := mustOpen(t, newFakeClock())
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			id := mustEnqueue(t, q, lite.NewJob{Kind: "anything"})
			ev, err := w.RunJob(t.Context(), id)
			is.NoErr(err)
			is.Equal(ev.Kind, lite.EventDone)
		})

		t.Run("a failure is written with its backoff and returned", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q := mustOpenOpts(t, filepath.Join(t.TempDir(), "q.db"), lite.Options{Now: clock.Now,
				Backoff: func(int) time.Duration { return time.Minute }})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle("a", func(context.Context, *lite.Job) error { return errors.New("smtp down") })
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			ev, err := w.RunJob(t.Context(), id)
			is.NoErr(err) // the handler's failure is the event's, not RunJob's
			is.Equal(ev.Kind, lite.EventFailed)
			is.Equal(ev.Err.Error(), "smtp down")
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.RunAt, clock.Now().Add(time.Minute).Local())
			is.Equal(j.Errors[0].Error, "smtp down")
		})

		t.Run("a lease lost while the handler ran is the event", func(t *testing.T) {
			is := is.New(t)
			q, _ := mustOpen(t, newFakeClock())
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle("a", func(ctx context.Context, job *lite.Job) error {
				_, err := q.ReleaseUnowned(ctx, job.ID) // an admin takes the job back
				return err
			})
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			ev, err := w.RunJob(t.Context(), id)
			is.NoErr(err)
			is.Equal(ev.Kind, lite.EventLeaseLost)
			is.True(errors.Is(ev.Err, lite.ErrLeaseLost))
			is.Equal(ev.CurrentGeneration, int64(2))
			is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
		})

		t.Run("a context that ends cancels the handler and releases the job", func(t *testing.T) {
			is := is.New(t)
			q, _ := mustOpen(t, newFakeClock())
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			ctx, cancel := context.WithCancel(t.Context())
			w.Handle("a", func(hctx context.Context, _ *lite.Job) error {
				cancel()
				<-hctx.Done()
				return context.Cause(hctx)
			})
			id := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			ev, err := w.RunJob(ctx, id)
			is.NoErr(err)
			is.Equal(ev.Kind, lite.EventReleased)
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Attempts, 0) // a release spends no attempt
		})

		t.Run("it is refused while the worker runs", func(t *testing.T) {
			is := is.New(t)
			q, _, w, calls := setup(t)
			idle := make(chan struct{}, 1)
			lite.SetIdleHook(w, func() {
				select {
				case idle <- struct{}{}:
				default:
				}
			})
			stop := runWorker(t, w)
			recv(t, idle)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "b"}) // a kind Run leaves alone
			_, err := w.RunJob(t.Context(), id)
			is.True(err != nil && strings.Contains(err.Error(), "already running"))
			stop()
			is.Equal(calls.Load(), int32(0))
			is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
		})
	})
}
