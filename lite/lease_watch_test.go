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
// would, while the worker's heartbeat is an hour away: only the wake-up
// by the commit can stop the handler.
func TestALostLeaseStopsItsHandlerAtTheNextCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, c := range []struct {
			name string
			take func(ctx context.Context, other *lite.Queue, id int64, clock *fakeClock) error
		}{
			{"a cancel from another queue stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				return other.Cancel(ctx, id)
			}},
			{"a release from another queue stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				_, err := other.ReleaseUnowned(ctx, id)
				return err
			}},
			{"a lease taken over in one commit stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				// A release and another worker's lease, committed together
				// as no look can come between them: the job is running
				// under a new generation, so the look must match it, not
				// the id and the state alone. Written by hand, it notifies
				// no one: the next commit, an enqueue, is the wake-up.
				if _, err := other.DB().ExecContext(ctx, `update lite_jobs set generation = generation + 2, locked_by = 'other' where id = $1`, id); err != nil {
					return err
				}
				_, err := other.Enqueue(ctx, lite.NewJob{Kind: "unhandled"})
				return err
			}},
			{"an ack of the lease from another queue stops the handler", func(ctx context.Context, other *lite.Queue, id int64, _ *fakeClock) error {
				// The generation stays: the look must match the state.
				return other.AckDone(ctx, lite.Lease{JobID: id, Generation: 1}, nil)
			}},
			{"a reclaim from another queue stops the handler", func(ctx context.Context, other *lite.Queue, _ int64, clock *fakeClock) error {
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
				// One slot, which the blocked run holds: the worker cannot
				// lease the job again, which would stop the old run by itself.
				w, _, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1}) // heartbeats an hour apart
				started := make(chan struct{})
				stopped, logged := make(chan error, 1), make(chan error, 1)
				w.Handle("block", func(ctx context.Context, job *lite.Job) error {
					if job.Generation > 1 {
						return nil // the job leased again once its first run stopped
					}
					close(started)
					<-ctx.Done()
					stopped <- context.Cause(ctx)
					logged <- lite.Log(ctx, "after the loss")
					return ctx.Err()
				})
				defer runWorker(t, w)()
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "block", MaxAttempts: 1})
				<-started
				is.NoErr(c.take(t.Context(), other, id, clock))
				is.True(errors.Is(recv(t, stopped), lite.ErrLeaseLost)) // why: no heartbeat ran
				is.True(errors.Is(recv(t, logged), lite.ErrLeaseLost))  // its reports are refused from then on
			})
		}
	})
}
