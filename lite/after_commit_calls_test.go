package lite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// Each write a caller waits on waits for Options.AfterCommit once its
// write committed, as Enqueue does (TestAfterCommit): one test per call,
// so that a mutation dropping one wait names the test that kills it.

// errReplicaOffline is what failingWait's AfterCommit fails with.
var errReplicaOffline = errors.New("replica offline")

// failingWait is an Options.AfterCommit that, while armed, counts its
// calls and fails, as a replica out of reach would.
type failingWait struct {
	armed atomic.Bool
	calls atomic.Int64
}

func (f *failingWait) afterCommit(context.Context) error {
	if !f.armed.Load() {
		return nil
	}
	f.calls.Add(1)
	return errReplicaOffline
}

// openFailingWait opens a queue on e, on clock, whose AfterCommit is a
// failingWait, not armed yet: the test's set-up writes pass.
func openFailingWait(t *testing.T, e testEngine, clock *fakeClock) (*lite.Queue, *failingWait) {
	t.Helper()
	f := &failingWait{}
	q, _ := e.open(t, lite.Options{Now: clock.Now, AfterCommit: f.afterCommit})
	return q, f
}

// once runs write with the wait armed, and requires that it waited once
// for its commit and returned the wait's failure as ErrAfterCommit.
func (f *failingWait) once(t *testing.T, write func(ctx context.Context) error) {
	t.Helper()
	is := is.New(t)
	f.calls.Store(0)
	f.armed.Store(true)
	err := write(t.Context())
	f.armed.Store(false)
	is.True(errors.Is(err, lite.ErrAfterCommit)) // why: committed, and the wait after it failed
	is.True(errors.Is(err, errReplicaOffline))
	is.Equal(f.calls.Load(), int64(1)) // one commit, one wait
}

// leasedOne enqueues a job and leases it by hand.
func leasedOne(t *testing.T, q *lite.Queue) (int64, lite.Lease) {
	t.Helper()
	id := mustEnqueue(t, q, lite.NewJob{})
	return id, mustLeaseOne(t, q, lite.DefaultQueue).Lease()
}

func TestAnAckDoneByHandWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error { return q.AckDone(ctx, l, []byte("ok")) })
		is.New(t).Equal(mustGet(t, q, id).State, lite.StateDone) // written all the same
	})
}

func TestAckDoneManyWaitsOnceForItsOneCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		a, la := leasedOne(t, q)
		b, lb := leasedOne(t, q)
		var results []error
		wait.once(t, func(ctx context.Context) (err error) {
			results, err = q.AckDoneMany(ctx, []lite.Done{{Lease: la}, {Lease: lb}})
			return err
		})
		is.Equal(results, []error{nil, nil}) // valid: the statement committed
		is.Equal(mustGet(t, q, a).State, lite.StateDone)
		is.Equal(mustGet(t, q, b).State, lite.StateDone)
	})
}

func TestCompleteWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error {
			return q.Complete(ctx, l, nil, func(*sql.Tx) error { return nil })
		})
		is.New(t).Equal(mustGet(t, q, id).State, lite.StateDone)
	})
}

func TestAckFailedWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error { return q.AckFailed(ctx, l, lite.Permanent(errors.New("no"))) })
		is.New(t).Equal(mustGet(t, q, id).State, lite.StateDead)
	})
}

func TestFailWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		var f lite.Failure
		wait.once(t, func(ctx context.Context) (err error) {
			f, err = q.Fail(ctx, l, lite.Permanent(errors.New("no")), nil)
			return err
		})
		is.Equal(f.State, lite.StateDead) // the failure as recorded, though the wait failed
		is.Equal(mustGet(t, q, id).State, lite.StateDead)
	})
}

func TestReleaseWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error { return q.Release(ctx, l) })
		is.New(t).Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})
}

func TestSnoozeWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error { return q.Snooze(ctx, l, time.Hour) })
		is.New(t).Equal(mustGet(t, q, id).Generation, l.Generation+1) // given back
	})
}

func TestReportWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		wait.once(t, func(ctx context.Context) error {
			return q.Report(ctx, l, lite.Update{Progress: json.RawMessage(`0.5`)})
		})
		is.New(t).Equal(string(mustGet(t, q, id).Progress), "0.5")
	})
}

func TestReleaseUnownedWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		id, l := leasedOne(t, q)
		var gen int64
		wait.once(t, func(ctx context.Context) (err error) {
			gen, err = q.ReleaseUnowned(ctx, id)
			return err
		})
		is.Equal(gen, l.Generation+1) // the new generation, though the wait failed
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})
}

func TestCancelWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, wait := openFailingWait(t, e, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{})
		wait.once(t, func(ctx context.Context) error { return q.Cancel(ctx, id) })
		is.New(t).Equal(mustGet(t, q, id).State, lite.StateCancelled)
	})
}

func TestRetryWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{})
		is.NoErr(q.Cancel(t.Context(), id))
		wait.once(t, func(ctx context.Context) error { return q.Retry(ctx, id) })
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})
}

func TestPurgeWaitsOnceAfterItsLastBatch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, wait := openFailingWait(t, e, clock)
		for range 2 {
			is.NoErr(q.Cancel(t.Context(), mustEnqueue(t, q, lite.NewJob{})))
		}
		var n int64
		wait.once(t, func(ctx context.Context) (err error) {
			n, err = q.Purge(ctx, clock.Now().Add(time.Hour))
			return err
		})
		is.Equal(n, int64(2))
	})
}

func TestBulkWaitsOnceAfterItsLastBatch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		a := mustEnqueue(t, q, lite.NewJob{})
		b := mustEnqueue(t, q, lite.NewJob{})
		var n int64
		wait.once(t, func(ctx context.Context) (err error) {
			n, err = q.Bulk(ctx, lite.BulkCancel, lite.Filter{})
			return err
		})
		is.Equal(n, int64(2))
		is.Equal(mustGet(t, q, a).State, lite.StateCancelled)
		is.Equal(mustGet(t, q, b).State, lite.StateCancelled)
	})
}

func TestEnqueueWorkflowWaitsAfterItsCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		var wf lite.WorkflowIDs
		wait.once(t, func(ctx context.Context) (err error) {
			wf, err = q.EnqueueWorkflow(ctx, lite.Workflow{Steps: []lite.Step{
				{Name: "first"}, {Name: "then", After: []string{"first"}},
			}})
			return err
		})
		is.Equal(len(wf.IDs), 2) // the ids, though the wait failed
		is.Equal(mustGet(t, q, wf.IDs[1]).State, lite.StateBlocked)
	})
}

func TestRunScheduleNowWaitsAfterItsCommitAndGivesTheJobsID(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, wait := openFailingWait(t, e, newFakeClock())
		mustSetSchedule(t, q, lite.Schedule{Name: "nightly", Spec: "@daily", Job: lite.NewJob{Kind: "report"}})
		var id int64
		wait.once(t, func(ctx context.Context) (err error) {
			id, err = q.RunScheduleNow(ctx, "nightly")
			return err
		})
		is.Equal(mustGet(t, q, id).Kind, "report") // enqueued, and its id given with the wait's failure
	})
}

func TestFireSchedulesByHandWaitsOnceAfterItsCommits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, wait := openFailingWait(t, e, clock)
		mustSetSchedule(t, q, lite.Schedule{Name: "a", Spec: "* * * * *", Job: lite.NewJob{Kind: "a"}})
		mustSetSchedule(t, q, lite.Schedule{Name: "b", Spec: "* * * * *", Job: lite.NewJob{Kind: "b"}})
		clock.Advance(time.Minute)
		var n int
		wait.once(t, func(ctx context.Context) (err error) {
			n, err = q.FireSchedules(ctx)
			return err
		})
		is.Equal(n, 2) // two ticks fired, and one wait after the last
	})
}

func TestAfterCommitLetsAnAppWaitAfterItsOwnTransaction(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, wait := openFailingWait(t, e, newFakeClock())
		wait.armed.Store(true)
		tx, err := q.DB().BeginTx(ctx, nil)
		is.NoErr(err)
		defer tx.Rollback()
		_, err = q.EnqueueTx(ctx, tx, lite.NewJob{})
		is.NoErr(err) // why: the app commits, so lite cannot wait in EnqueueTx
		is.NoErr(tx.Commit())
		is.Equal(wait.calls.Load(), int64(0))
		wait.armed.Store(false)
		wait.once(t, q.AfterCommit)
	})
}

func TestAWorkersOutcomesWaitOnceEach(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		outcomes := []struct {
			name    string
			handler lite.Handler
			state   lite.State
		}{
			{"a done-ack", func(context.Context, *lite.Job) error { return nil }, lite.StateDone},
			{"a snooze", func(context.Context, *lite.Job) error { return lite.Snooze(time.Hour) }, lite.StateAvailable},
		}
		for _, o := range outcomes {
			t.Run(o.name+" waits once, not once in the worker and once more in the write", func(t *testing.T) {
				is := is.New(t)
				var calls atomic.Int64 // a wait that succeeds: one that fails ends the write's part
				q, _ := e.open(t, lite.Options{Now: newFakeClock().Now, AfterCommit: func(context.Context) error { calls.Add(1); return nil }})
				id := mustEnqueue(t, q, lite.NewJob{})
				w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
				w.Handle(lite.AnyKind, o.handler)
				calls.Store(0)
				is.NoErr(w.Run(t.Context()))
				is.Equal(calls.Load(), int64(1))
				is.Equal(mustGet(t, q, id).State, o.state)
			})
		}
	})
}
