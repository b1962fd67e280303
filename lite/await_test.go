package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// fanOut is a parent's handler: it enqueues children in a step, once,
// and awaits them.
type fanOut struct {
	q        *lite.Queue
	children []lite.NewJob
	enqueued int
	outcomes []lite.Dependency
}

func (f *fanOut) handle(ctx context.Context, _ *lite.Job) error {
	ids, err := lite.RunStepTx(ctx, "children", func(ctx context.Context, tx *sql.Tx) ([]int64, error) {
		f.enqueued++
		var ids []int64
		for _, c := range f.children {
			id, err := f.q.EnqueueTx(ctx, tx, c)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	})
	if err != nil {
		return err
	}
	f.outcomes, err = lite.Await(ctx, ids...)
	return err
}

func TestAwaitParksUntilEveryChildHasEndedWhateverItsEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"}) // the default policy cancels on a dead dependency
		f := &fanOut{q: q, children: []lite.NewJob{{Kind: "c"}, {Kind: "c"}, {Kind: "c"}}}
		w := durableWorker(t, q, f.handle)
		var failing int64
		w.Handle("c", func(ctx context.Context, job *lite.Job) error {
			if job.ID == failing {
				return lite.Permanent(errors.New("no such file"))
			}
			lite.SetResult(ctx, fmt.Appendf(nil, "%d", job.ID*10))
			return nil
		})

		ev := mustRun(t, w, parent)
		is.Equal(ev.Kind, lite.EventParked)
		is.Equal(ev.State, lite.StateBlocked)
		j, err := q.Get(t.Context(), parent)
		is.NoErr(err)
		is.Equal(j.State, lite.StateBlocked)
		is.Equal(j.Parked, lite.ParkedAwait)
		deps, err := q.Dependencies(t.Context(), parent)
		is.NoErr(err)
		is.Equal(len(deps), 3) // `lite show` lists what it waits for
		a, b, c := deps[0].ID, deps[1].ID, deps[2].ID

		is.Equal(mustRun(t, w, a).Kind, lite.EventDone)
		failing = b
		is.Equal(mustRun(t, w, b).Kind, lite.EventFailed)
		j, err = q.Get(t.Context(), parent)
		is.NoErr(err)
		is.Equal(j.State, lite.StateBlocked) // a dead child cancels no parent, and one is pending
		is.NoErr(q.Cancel(t.Context(), c))
		j, err = q.Get(t.Context(), parent)
		is.NoErr(err)
		is.Equal(j.State, lite.StateAvailable) // the last end wakes it

		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
		is.Equal(f.enqueued, 1) // the second run found its children in the step's record
		is.Equal(len(f.outcomes), 3)
		is.Equal([]lite.State{f.outcomes[0].State, f.outcomes[1].State, f.outcomes[2].State},
			[]lite.State{lite.StateDone, lite.StateDead, lite.StateCancelled})
		v, err := lite.ResultOf[int64](f.outcomes[0])
		is.NoErr(err)
		is.Equal(v, a*10)
		_, err = lite.ResultOf[int64](f.outcomes[1])
		is.True(errors.Is(err, lite.ErrInvalidState)) // a dead child has no result to decode
	})
}

func TestAwaitOfEndedJobsReturnsAtOnceAndItsRecordStands(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		child := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 3})
		var got [][]lite.Dependency
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			outcomes, err := lite.Await(ctx, child, child)
			if err != nil {
				return err
			}
			got = append(got, outcomes)
			if len(got) == 1 {
				return errors.New("a later step failed")
			}
			return nil
		})
		w.Handle("c", func(context.Context, *lite.Job) error { return nil })
		is.Equal(mustRun(t, w, child).Kind, lite.EventDone)
		is.Equal(mustRun(t, w, parent).Kind, lite.EventFailed)
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
		is.Equal(len(got), 2)
		is.Equal(len(got[0]), 2) // the i-th outcome is the i-th id's, a repeated one too
		is.Equal(got[0][0].State, lite.StateDone)
		is.Equal(got[1], got[0]) // the second attempt read the record
	})
}

func TestAwaitRefusesWhatCanNeverEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		var errs []error
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			_, err := lite.Await(ctx, job.ID)
			errs = append(errs, err)
			_, err = lite.Await(ctx, 1<<40)
			errs = append(errs, err)
			_, err = lite.Await(ctx)
			errs = append(errs, err)
			return nil
		})
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
		is.True(errors.Is(errs[0], lite.ErrInvalid))
		is.True(errors.Is(errs[1], lite.ErrNotFound))
		is.True(errors.Is(errs[2], lite.ErrInvalid))
		_, err := lite.Await(t.Context(), parent)
		is.True(errors.Is(err, lite.ErrNotRunning))
	})
}

func TestAStaleAwaitParksNothingAndRecordsNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		child := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		acked := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		awaitChild := &lite.ParkError{Reason: lite.ParkedAwait, Jobs: []int64{child}}
		mustLeaseOne(t, q, "default") // the child, running

		// A park after its own lease's ack: the same generation, done.
		job := mustLeaseOne(t, q, "default")
		is.Equal(job.ID, acked)
		is.NoErr(q.AckDone(t.Context(), job.Lease(), nil))
		is.True(errors.Is(lite.Park(t.Context(), q, job.Lease(), awaitChild), lite.ErrLeaseLost))
		is.Equal(mustGet(t, q, acked).State, lite.StateDone)

		// A park of a lease released and taken again: running, a newer
		// generation.
		stale := mustLeaseOne(t, q, "default")
		_, err := q.ReleaseUnowned(t.Context(), parent)
		is.NoErr(err)
		current := mustLeaseOne(t, q, "default")
		is.True(errors.Is(lite.Park(t.Context(), q, stale.Lease(), awaitChild), lite.ErrLeaseLost))
		j := mustGet(t, q, parent)
		is.Equal(j.State, lite.StateRunning)
		is.Equal(j.Generation, current.Generation)
		is.Equal(j.Parked, "")
		deps, err := q.Dependencies(t.Context(), parent)
		is.NoErr(err)
		is.Equal(len(deps), 0) // no edge

		// A stale lease finds its child ended, and records nothing.
		is.NoErr(q.Cancel(t.Context(), child))
		ctx := lite.HandlerContext(t.Context(), q, stale.Lease(), func(error) {})
		_, err = lite.Await(ctx, child)
		is.True(errors.Is(err, lite.ErrLeaseLost))
		steps, err := q.Steps(t.Context(), parent)
		is.NoErr(err)
		is.Equal(len(steps), 0)
	})
}

func TestAnAwaitedChildCancelledByItsWorkflowWakesItsParent(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		var first, second int64
		var outcomes []lite.Dependency
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			ids, err := lite.RunStepTx(ctx, "children", func(ctx context.Context, tx *sql.Tx) (lite.WorkflowIDs, error) {
				return q.EnqueueWorkflowTx(ctx, tx, lite.Workflow{Steps: []lite.Step{
					{Name: "fetch", Job: lite.NewJob{Kind: "c"}},
					{Name: "parse", Job: lite.NewJob{Kind: "c"}, After: []string{"fetch"}},
				}})
			})
			if err != nil {
				return err
			}
			first, second = ids.IDs[0], ids.IDs[1]
			outcomes, err = lite.Await(ctx, first, second)
			return err
		})
		w.Handle("c", func(context.Context, *lite.Job) error { return lite.Permanent(errors.New("gone")) })
		is.Equal(mustRun(t, w, parent).Kind, lite.EventParked)
		n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{IDs: []int64{first}})
		is.NoErr(err)
		is.Equal(n, int64(0))                                 // not deleted from under the job that awaits it
		is.Equal(mustRun(t, w, first).Kind, lite.EventFailed) // dead: its dependent is cancelled
		j, err := q.Get(t.Context(), parent)
		is.NoErr(err)
		is.Equal(j.State, lite.StateAvailable)
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
		is.Equal(outcomes[0].State, lite.StateDead)
		is.Equal(outcomes[1].State, lite.StateCancelled)
	})
}

func TestARetriedParentThatWasCancelledWhileItAwaitedWaitsAgain(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		child := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			_, err := lite.Await(ctx, child)
			return err
		})
		w.Handle("c", func(context.Context, *lite.Job) error { return nil })
		is.Equal(mustRun(t, w, parent).Kind, lite.EventParked)
		is.NoErr(q.Cancel(t.Context(), parent))
		c, err := q.Get(t.Context(), child)
		is.NoErr(err)
		is.Equal(c.State, lite.StateAvailable) // a parent's cancel leaves its children alone
		is.NoErr(q.Retry(t.Context(), parent))
		j, err := q.Get(t.Context(), parent)
		is.NoErr(err)
		is.Equal(j.State, lite.StateBlocked) // still waiting for its child
		is.Equal(mustRun(t, w, child).Kind, lite.EventDone)
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
	})
}

// On PostgreSQL the park and the end of a job it awaits run at once on
// two sessions: whichever takes the job's row first, the other sees it,
// and the parent is woken.
func TestAnAwaitedJobThatEndsWhileItsParentParksWakesIt(t *testing.T) {
	e := onPostgres(t)
	t.Run("the end holds the row first: the park sees it ended", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		child := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		end, pid := appTx(t, q)
		_, err := end.ExecContext(ctx, `update lite_jobs set state = 'cancelled', finished_at = 1 where id = $1`, child)
		is.NoErr(err)
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			_, err := lite.Await(ctx, child)
			return err
		})
		parked := make(chan lite.Event, 1)
		go func() {
			ev, err := w.RunJob(ctx, parent)
			is.NoErr(err)
			parked <- ev
		}()
		waitUntilBlockedBy(t, q, pid) // the park waits for the child's row
		is.NoErr(end.Commit())
		is.Equal((<-parked).Kind, lite.EventParked)
		is.Equal(mustGet(t, q, parent).State, lite.StateAvailable) // not blocked behind an end it missed
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
	})
	t.Run("the park holds the row first: the end counts on its edge", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		child := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		parent := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		cancelled := make(chan error, 1)
		lite.FreezeAfterDepsLock(t, func() {
			go func() { cancelled <- q.Cancel(ctx, child) }()
			for waiting := 0; waiting == 0; time.Sleep(10 * time.Millisecond) { // until the cancel waits for the row
				is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from pg_stat_activity
where wait_event_type = 'Lock' and query like '%cancelled%'`).Scan(&waiting))
			}
		})
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			_, err := lite.Await(ctx, child)
			return err
		})
		ev := mustRun(t, w, parent)
		is.Equal(ev.Kind, lite.EventParked)
		is.Equal(ev.State, lite.StateBlocked)
		is.NoErr(<-cancelled)
		is.Equal(mustGet(t, q, parent).State, lite.StateAvailable)
		is.Equal(mustRun(t, w, parent).Kind, lite.EventDone)
	})
}

func TestAParkErrorMadeByHandThatNoWorkerCanParkFailsTheAttempt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, tc := range []struct {
			name string
			park func(self int64) *lite.ParkError
		}{
			{"an await of nothing", func(int64) *lite.ParkError { return &lite.ParkError{Reason: lite.ParkedAwait} }},
			{"an await of itself", func(self int64) *lite.ParkError {
				return &lite.ParkError{Reason: lite.ParkedAwait, Jobs: []int64{self}}
			}},
			{"a sleep with no time", func(int64) *lite.ParkError { return &lite.ParkError{Reason: lite.ParkedSleep} }},
			{"a sleep past year 9999", func(int64) *lite.ParkError {
				return &lite.ParkError{Reason: lite.ParkedSleep, Until: time.Unix(1<<62, 0)}
			}},
			{"a wait for a signal of no name", func(int64) *lite.ParkError {
				return &lite.ParkError{Reason: lite.ParkedSignal, Until: time.Now().Add(time.Hour)}
			}},
			{"a reason of no kind", func(int64) *lite.ParkError { return &lite.ParkError{Reason: "nap", Until: time.Now()} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 1})
				w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
					return fmt.Errorf("wrapped: %w", tc.park(job.ID))
				})
				ev := mustRun(t, w, id)
				is.Equal(ev.Kind, lite.EventFailed)
				is.True(errors.Is(ev.Err, lite.ErrInvalid))
				is.Equal(mustGet(t, q, id).State, lite.StateDead) // its one attempt spent: no loop, no block
			})
		}
	})
}
