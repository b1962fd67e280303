package lite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// noLease says that j shows no lease: no worker, token, lease or
// heartbeat time.
func noLease(is *is.I, j *lite.Job) {
	is.Helper()
	is.Equal(j.LockedBy, "")
	is.Equal(j.LeaseToken, "")
	is.True(j.LeasedAt.IsZero())
	is.True(j.HeartbeatAt.IsZero())
}

func TestAJobAvailableAgainShowsNoLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cases := []struct {
			name string
			// again makes the leased job available again.
			again func(ctx context.Context, q *lite.Queue, clock *fakeClock, j *lite.Job) error
		}{
			{"a failed attempt that retries", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				return q.AckFailed(ctx, j.Lease(), errors.New("try later"))
			}},
			{"a release", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				return q.Release(ctx, j.Lease())
			}},
			{"a release of a lease its owner holds", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				_, err := q.ReleaseUnowned(ctx, j.ID)
				return err
			}},
			{"a snooze", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				return q.Snooze(ctx, j.Lease(), time.Minute)
			}},
			{"a reclaim", func(ctx context.Context, q *lite.Queue, clock *fakeClock, _ *lite.Job) error {
				clock.Advance(lite.DefaultStaleAfter + time.Second)
				_, err := q.ReclaimOrphaned(ctx)
				return err
			}},
			{"a retry of a dead job", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				if err := q.AckFailed(ctx, j.Lease(), lite.Permanent(errors.New("bad input"))); err != nil {
					return err
				}
				return q.Retry(ctx, j.ID)
			}},
			{"a retry of a job cancelled while it ran", func(ctx context.Context, q *lite.Queue, _ *fakeClock, j *lite.Job) error {
				if err := q.Cancel(ctx, j.ID); err != nil {
					return err
				}
				return q.Retry(ctx, j.ID)
			}},
		}
		for _, c := range cases {
			t.Run(c.name+" clears the lease fields", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 3})
				j := mustLeaseOne(t, q, lite.DefaultQueue)
				is.True(mustGet(t, q, id).LockedBy != "") // the lease is shown while it runs
				is.NoErr(c.again(t.Context(), q, clock, j))
				after := mustGet(t, q, id)
				is.Equal(after.State, lite.StateAvailable)
				noLease(is, after)
			})
		}

		t.Run("a job dead of its failure keeps its last run's lease as a record", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			j := mustLeaseOne(t, q, lite.DefaultQueue)
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("smtp down")))
			dead := mustGet(t, q, id)
			is.Equal(dead.State, lite.StateDead)
			is.Equal(dead.LockedBy, j.LockedBy)
			is.Equal(dead.LeaseToken, j.LeaseToken)
		})
	})
}
