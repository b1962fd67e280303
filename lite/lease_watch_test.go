package lite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestALostLeaseStopsItsHandlerAtTheNextCommit takes a running job's
// lease from another queue on the same database, as another process
// would, while the worker's heartbeat is an hour away: only the commit
// wake-up can stop the handler.
func TestALostLeaseStopsItsHandlerAtTheNextCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, c := range []struct {
			name string
			take func(ctx context.Context, other *lite.Queue, id int64, clock *fakeClock) error
		}{
			{"a cancel by another process stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				return other.Cancel(ctx, id)
			}},
			{"a release by another process stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				_, err := other.ReleaseUnowned(ctx, id)
				return err
			}},
			{"a reclaim by another process stops the handler", func(ctx context.Context, other *lite.Queue, _ int64, clock *fakeClock) error {
				clock.Advance(4 * time.Hour) // past the worker's StaleAfter, with no heartbeat in between
				got, err := other.ReclaimOrphaned(ctx)
				if err == nil && len(got) != 1 {
					err = errors.New("reclaimed nothing")
				}
				return err
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, dsn := e.mustOpen(t, clock)
				other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
				w, _, _ := testWorker(t, q, lite.WorkerOptions{}) // heartbeats an hour apart
				started := make(chan struct{})
				stopped := make(chan error, 1)
				w.Handle("block", func(ctx context.Context, _ *lite.Job) error {
					close(started)
					<-ctx.Done()
					stopped <- context.Cause(ctx)
					return ctx.Err()
				})
				defer runWorker(t, w)()
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "block", MaxAttempts: 1})
				<-started
				// Paused, the job released or reclaimed is not leased again:
				// a new lease would stop the old run by itself.
				is.NoErr(other.Pause(t.Context(), "q"))
				is.NoErr(c.take(t.Context(), other, id, clock))
				select {
				case cause := <-stopped:
					is.True(errors.Is(cause, lite.ErrLeaseLost))
				case <-time.After(guard):
					t.Fatal("the handler was not stopped")
				}
			})
		}
	})
}
