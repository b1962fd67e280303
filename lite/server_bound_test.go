package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// serverBound is lite's default bound on its transactions on a server
// (Options.ServerTxTimeout), and slack what a call may take beyond it on
// a busy machine.
const (
	serverBound = 2 * time.Second
	slack       = 1500 * time.Millisecond
)

// within runs call in the background and returns its error and how long
// it took, or fails the test once it takes longer than limit (then
// unstick, which ends what holds it up, runs first, and the call is
// waited for).
func within(t *testing.T, limit time.Duration, unstick func(), call func() error) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- call() }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		unstick()
		err := <-done
		t.Errorf("the call took longer than %s (%s, %v)", limit, time.Since(start), err)
		return time.Since(start), err
	}
}

// TestAStalledTransactionOnPostgresHoldsUpNoOtherCall stalls one process
// inside a transaction of lite's on PostgreSQL, longer than the bound on
// it: the others' acks, heartbeats and reclaims go through within the
// bound (the server ends the stalled transaction), the stalled call
// returns an error, and nothing it wrote there commits. Without a bound
// the others waited for as long as the stall lasted.
func TestAStalledTransactionOnPostgresHoldsUpNoOtherCall(t *testing.T) {
	e := onPostgres(t)
	const staleAfter = time.Second
	const stall = 3 * serverBound // longer than the bound, shorter than a test's patience
	hosts := func(t *testing.T) (clock *fakeClock, stalled, other *lite.Queue) {
		clock = newFakeClock()
		stalled, dsn := e.mustOpen(t, clock)
		return clock, stalled, mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
	}
	lease := func(t *testing.T, q *lite.Queue, id int64) *lite.Job {
		t.Helper()
		jobs, err := q.Lease(t.Context(), lite.LeaseRequest{StaleAfter: staleAfter, Max: 1})
		if err != nil || len(jobs) != 1 || jobs[0].ID != id {
			t.Fatalf("lease: %v, %d jobs, want job %d", err, len(jobs), id)
		}
		return jobs[0]
	}

	t.Run("a Complete stalled in its writes holds up no ack, heartbeat or reclaim of another process", func(t *testing.T) {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		clock, stalled, other := hosts(t)
		wf, err := other.EnqueueWorkflow(ctx, lite.Workflow{
			Steps: []lite.Step{{Job: lite.NewJob{Kind: "part"}}, {Job: lite.NewJob{Kind: "part"}}},
			Batch: &lite.Callback{Kind: "report"},
		})
		is.NoErr(err)
		first, second := lease(t, stalled, wf.IDs[0]), lease(t, other, wf.IDs[1])

		inside, thaw := make(chan struct{}), make(chan struct{})
		completed := make(chan error, 1)
		go func() {
			completed <- stalled.Complete(ctx, first.Lease(), nil, func(*sql.Tx) error {
				close(inside)
				select { // a process stopped here, its transaction open
				case <-thaw:
				case <-time.After(stall):
				}
				return nil
			})
		}()
		<-inside
		unstick := func() {}
		clock.Advance(2 * staleAfter) // the stalled lease lapses
		_, err = within(t, serverBound+slack, unstick, func() error {
			renewed, err := other.Renew(ctx, []lite.Lease{second.Lease()})
			if err == nil {
				err = renewed[0]
			}
			return err
		})
		is.NoErr(err) // the other's heartbeat
		_, err = within(t, serverBound+slack, unstick, func() error {
			_, err := other.ReclaimOrphaned(ctx)
			return err
		})
		is.NoErr(err) // a reclaim that wants the stalled job's row
		_, err = within(t, serverBound+slack, unstick, func() error { return other.AckDone(ctx, second.Lease(), nil) })
		is.NoErr(err) // an ack of the same batch
		close(thaw)
		is.True(<-completed != nil)                                  // why: the server ended the stalled transaction
		is.True(mustGet(t, other, first.ID).State != lite.StateDone) // why: its ack never committed
		is.Equal(mustGet(t, other, second.ID).State, lite.StateDone) // the other's did
		b, err := other.GetBatch(ctx, wf.Batch)
		is.NoErr(err)
		is.Equal(b.Done, 1) // counted once, for the ack that committed
	})

	t.Run("a workflow enqueue stalled in its transaction holds the job it waits for no longer than the bound", func(t *testing.T) {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		_, stalled, other := hosts(t)
		running := lease(t, other, mustEnqueue(t, other, lite.NewJob{Kind: "first"}))
		hook, frozen, thaw := freezeFirst(t)
		lite.FreezeAfterDepsLock(t, hook)

		enqueued := make(chan error, 1)
		go func() {
			_, err := stalled.EnqueueWorkflow(ctx, lite.Workflow{Steps: []lite.Step{{Job: lite.NewJob{Kind: "then", DependsOn: []int64{running.ID}}}}})
			enqueued <- err
		}()
		<-frozen
		_, err := within(t, serverBound+slack, thaw, func() error {
			renewed, err := other.Renew(ctx, []lite.Lease{running.Lease()})
			if err == nil {
				err = renewed[0]
			}
			return err
		})
		is.NoErr(err) // the running job's heartbeat
		_, err = within(t, serverBound+slack, thaw, func() error { return other.AckDone(ctx, running.Lease(), nil) })
		is.NoErr(err) // and its ack
		thaw()
		is.True(<-enqueued != nil)                     // why: the server ended the stalled transaction
		is.Equal(len(jobsOfKind(t, other, "then")), 0) // nothing of the workflow committed
	})
}

// TestACallReturnsByItsDeadlineWhileARowItNeedsIsLocked holds a job's row
// in an app's transaction on PostgreSQL: calls that need the row and have
// a deadline return by it, with an error that says so, and write nothing.
// Before, a write waited for the row however short its deadline.
func TestACallReturnsByItsDeadlineWhileARowItNeedsIsLocked(t *testing.T) {
	e := onPostgres(t)
	const deadline = 500 * time.Millisecond
	clock := newFakeClock()
	q, _ := e.mustOpen(t, clock)
	ctx := context.WithoutCancel(t.Context())

	calls := []struct {
		name string
		call func(ctx context.Context, l lite.Lease) error
	}{
		{"an ack", func(ctx context.Context, l lite.Lease) error { return q.AckDone(ctx, l, nil) }},
		{"a Complete", func(ctx context.Context, l lite.Lease) error { return q.Complete(ctx, l, nil, nil) }},
		{"a failure", func(ctx context.Context, l lite.Lease) error { return q.AckFailed(ctx, l, errors.New("boom")) }},
	}
	for _, c := range calls {
		t.Run(c.name+" returns by its deadline", func(t *testing.T) {
			is := is.New(t)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "deadline"})
			j := mustLeaseOne(t, q, "deadline")
			app, err := q.DB().BeginTx(ctx, nil)
			is.NoErr(err)
			defer app.Rollback()
			_, err = app.ExecContext(ctx, `select id from lite_jobs where id = $1 for update`, id)
			is.NoErr(err)

			short, cancel := context.WithTimeout(ctx, deadline)
			defer cancel()
			took, err := within(t, deadline+slack, func() { app.Rollback() }, func() error { return c.call(short, j.Lease()) })
			is.True(errors.Is(err, context.DeadlineExceeded)) // why: it says why it gave up
			is.True(took < deadline+500*time.Millisecond)
			var waiting int
			is.NoErr(app.QueryRowContext(ctx, `select count(*) from pg_locks where locktype = 'tuple' and relation = 'lite_jobs'::regclass`).Scan(&waiting))
			is.Equal(waiting, 0) // why: the server ended the call's wait for the row, rather than leave it queued
			is.NoErr(app.Rollback())
			after := mustGet(t, q, id)
			is.Equal(after.State, lite.StateRunning) // nothing written
			is.Equal(after.Generation, j.Generation)
		})
	}
}
