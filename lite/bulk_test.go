package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// jobsInEveryState makes one job in each state in queue, and returns
// their ids by state.
func jobsInEveryState(t *testing.T, q *lite.Queue, queue string) map[lite.State]int64 {
	t.Helper()
	is := is.New(t)
	ids := map[lite.State]int64{}
	for _, s := range []lite.State{lite.StateDone, lite.StateDead, lite.StateCancelled, lite.StateRunning} {
		ids[s] = mustEnqueue(t, q, lite.NewJob{Queue: queue, MaxAttempts: 1})
		j := mustLeaseOne(t, q, queue)
		is.Equal(j.ID, ids[s])
		switch s {
		case lite.StateDone:
			is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
		case lite.StateDead:
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("boom")))
		case lite.StateCancelled:
			is.NoErr(q.Cancel(t.Context(), j.ID))
		}
	}
	ids[lite.StateAvailable] = mustEnqueue(t, q, lite.NewJob{Queue: queue})
	return ids
}

// statesOf reads the state of each job of ids, by the state it was made
// in; a deleted job reads as "".
func statesOf(t *testing.T, q *lite.Queue, ids map[lite.State]int64) map[lite.State]lite.State {
	t.Helper()
	got := map[lite.State]lite.State{}
	for made, id := range ids {
		j, err := q.Get(t.Context(), id)
		switch {
		case errors.Is(err, lite.ErrNotFound):
			got[made] = ""
		case err != nil:
			t.Fatal(err)
		default:
			got[made] = j.State
		}
	}
	return got
}

func TestBulk(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("retry starts the dead and cancelled jobs over and nothing else", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")
			n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(2))
			is.Equal(statesOf(t, q, ids), map[lite.State]lite.State{
				lite.StateDone: lite.StateDone, lite.StateDead: lite.StateAvailable,
				lite.StateCancelled: lite.StateAvailable, lite.StateRunning: lite.StateRunning,
				lite.StateAvailable: lite.StateAvailable,
			})
			is.Equal(mustGet(t, q, ids[lite.StateDead]).Attempts, 0) // its whole max_attempts again
		})

		t.Run("cancel voids a running lease and leaves finished jobs alone", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")
			running := mustGet(t, q, ids[lite.StateRunning])
			n, err := q.BulkCount(t.Context(), lite.BulkCancel, lite.Filter{Queue: "q"})
			is.NoErr(err)
			is.Equal(n, int64(2)) // the dry run counts what the action changes
			n, err = q.Bulk(t.Context(), lite.BulkCancel, lite.Filter{Queue: "q"})
			is.NoErr(err)
			is.Equal(n, int64(2))
			is.Equal(statesOf(t, q, ids), map[lite.State]lite.State{
				lite.StateDone: lite.StateDone, lite.StateDead: lite.StateDead,
				lite.StateCancelled: lite.StateCancelled, lite.StateRunning: lite.StateCancelled,
				lite.StateAvailable: lite.StateCancelled,
			})
			is.Equal(mustGet(t, q, running.ID).Generation, running.Generation+1) // as Cancel does
			err = q.AckDone(t.Context(), running.Lease(), nil)
			is.True(errors.Is(err, lite.ErrLeaseLost)) // the old worker's ack changes nothing
		})

		t.Run("delete never deletes a running job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")
			n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(4))
			is.Equal(statesOf(t, q, ids), map[lite.State]lite.State{
				lite.StateDone: "", lite.StateDead: "", lite.StateCancelled: "",
				lite.StateRunning: lite.StateRunning, lite.StateAvailable: "",
			})
			_, err = q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{States: []lite.State{lite.StateRunning}})
			is.True(errors.Is(err, lite.ErrInvalidState)) // asked for explicitly, still refused
		})

		t.Run("a batch leaves a job that changed state since it was found", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")
			all := []int64{ids[lite.StateDone], ids[lite.StateDead], ids[lite.StateCancelled], ids[lite.StateRunning], ids[lite.StateAvailable]}
			for action, want := range map[lite.BulkAction]int64{lite.BulkRetry: 2} {
				n, err := lite.BulkApply(t.Context(), q, action, all)
				is.NoErr(err)
				is.Equal(n, want)
			}
			// Now dead and cancelled are available: three available, one running.
			n, err := lite.BulkApply(t.Context(), q, lite.BulkDelete, all)
			is.NoErr(err)
			is.Equal(n, int64(4)) // all but the running job
			is.Equal(mustGet(t, q, ids[lite.StateRunning]).State, lite.StateRunning)
			n, err = lite.BulkApply(t.Context(), q, lite.BulkCancel, all)
			is.NoErr(err)
			is.Equal(n, int64(1)) // the running job, the others are gone
		})

		t.Run("a batch cancels no finished job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")
			n, err := lite.BulkApply(t.Context(), q, lite.BulkCancel, []int64{ids[lite.StateDone], ids[lite.StateDead]})
			is.NoErr(err)
			is.Equal(n, int64(0))
			n, err = lite.BulkApply(t.Context(), q, lite.BulkRetry, []int64{ids[lite.StateDone], ids[lite.StateRunning]})
			is.NoErr(err)
			is.Equal(n, int64(0))
		})

		t.Run("the filter's queue, kind, age and ids narrow it", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.open(t, lite.Options{Synchronous: lite.SyncNormal, Now: clock.Now})
			old := mustEnqueue(t, q, lite.NewJob{Queue: "a", Kind: "k"})
			clock.Advance(time.Hour)
			cut := clock.Now()
			newer := mustEnqueue(t, q, lite.NewJob{Queue: "a", Kind: "k"})
			other := mustEnqueue(t, q, lite.NewJob{Queue: "a", Kind: "other"})
			elsewhere := mustEnqueue(t, q, lite.NewJob{Queue: "b", Kind: "k"})
			count := func(f lite.Filter) int64 {
				n, err := q.BulkCount(t.Context(), lite.BulkCancel, f)
				is.NoErr(err)
				return n
			}
			is.Equal(count(lite.Filter{}), int64(4))
			is.Equal(count(lite.Filter{Queue: "a"}), int64(3))
			is.Equal(count(lite.Filter{Queue: "a", Kind: "k"}), int64(2))
			is.Equal(count(lite.Filter{Before: cut}), int64(1))
			is.Equal(count(lite.Filter{IDs: []int64{newer, elsewhere}}), int64(2))
			n, err := q.Bulk(t.Context(), lite.BulkCancel, lite.Filter{Queue: "a", Kind: "k", Before: cut})
			is.NoErr(err)
			is.Equal(n, int64(1))
			is.Equal(mustGet(t, q, old).State, lite.StateCancelled)
			for _, id := range []int64{newer, other, elsewhere} {
				is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
			}
		})

		t.Run("the filter's tags narrow it to the jobs carrying every one", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			both := mustEnqueue(t, q, lite.NewJob{Kind: "k", Tags: []string{"eu", "vip"}})
			eu := mustEnqueue(t, q, lite.NewJob{Kind: "k", Tags: []string{"eu"}})
			none := mustEnqueue(t, q, lite.NewJob{Kind: "k"})
			count := func(tags ...string) int64 {
				n, err := q.BulkCount(t.Context(), lite.BulkCancel, lite.Filter{Tags: tags})
				is.NoErr(err)
				return n
			}
			is.Equal(count("eu"), int64(2))
			is.Equal(count("vip", "eu"), int64(1))
			is.Equal(count("us"), int64(0))
			n, err := q.Bulk(t.Context(), lite.BulkCancel, lite.Filter{Tags: []string{"vip"}})
			is.NoErr(err)
			is.Equal(n, int64(1))
			is.Equal(mustGet(t, q, both).State, lite.StateCancelled)
			is.Equal(mustGet(t, q, eu).State, lite.StateAvailable)
			is.Equal(mustGet(t, q, none).State, lite.StateAvailable)
			_, err = q.BulkCount(t.Context(), lite.BulkCancel, lite.Filter{Tags: []string{"a,b"}})
			is.True(errors.Is(err, lite.ErrInvalid)) // a tag is checked as at enqueue
		})

		t.Run("it works through more jobs than one batch", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			jobs := make([]lite.NewJob, 2500)
			_, err := q.EnqueueBatch(t.Context(), jobs)
			is.NoErr(err)
			n, err := q.BulkCount(t.Context(), lite.BulkDelete, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(2500))
			n, err = q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(2500))
		})

		t.Run("retry skips a job whose unique key is held and starts one of those sharing a key", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			dead := func() int64 {
				id := mustEnqueue(t, q, lite.NewJob{UniqueKey: "k", MaxAttempts: 1})
				is.NoErr(q.Cancel(t.Context(), id))
				return id
			}
			first, second := dead(), dead()
			n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(1))
			is.Equal(mustGet(t, q, first).State, lite.StateAvailable)
			is.Equal(mustGet(t, q, second).State, lite.StateCancelled)
			n, err = q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(0)) // first holds the key now
		})

		t.Run("a state the action does not apply to is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			_, err := q.BulkCount(t.Context(), lite.BulkRetry, lite.Filter{States: []lite.State{lite.StateDone}})
			is.True(errors.Is(err, lite.ErrInvalidState))
			_, err = q.Bulk(t.Context(), lite.BulkAction("explode"), lite.Filter{})
			is.True(err != nil)
		})
	})
}

// A delete's dry run counts what the delete would remove: not a done job
// that an unfinished job still waits for, which the delete keeps.
func TestABulkDeletesCountLeavesOutAJobAnUnfinishedJobWaitsFor(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		first := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
		other := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
		mustEnqueue(t, q, lite.NewJob{Kind: "b", DependsOn: []int64{first, other}})
		mustDone(t, q, leaseID(t, q, first), "")
		done := lite.Filter{States: []lite.State{lite.StateDone}}
		n, err := q.BulkCount(ctx, lite.BulkDelete, done)
		is.NoErr(err)
		is.Equal(n, int64(0)) // its dependent still waits for other
		deleted, err := q.Bulk(ctx, lite.BulkDelete, done)
		is.NoErr(err)
		is.Equal(deleted, n)
	})
}

// TestABulkDeleteWaitingForAJobsRowSeesTheDependentEnqueuedMeanwhile: an
// app's transaction enqueues a job that waits for J (locking J's row)
// while a bulk delete of J waits for that row. On PostgreSQL the delete
// read whether a job waits for J in the statements that waited, from
// before the enqueue committed: it cancelled and deleted J, and J's end
// cancelled the new dependent, which had asked to wait for J and run.
func TestABulkDeleteWaitingForAJobsRowSeesTheDependentEnqueuedMeanwhile(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := t.Context()
	q, _ := e.mustOpen(t, newFakeClock())
	j := mustEnqueue(t, q, lite.NewJob{Kind: "upstream"})

	app, pid := appTx(t, q)
	k, err := q.EnqueueTx(ctx, app, lite.NewJob{Kind: "downstream", DependsOn: []int64{j}})
	is.NoErr(err)
	type result struct {
		n   int64
		err error
	}
	deleted := make(chan result, 1)
	go func() {
		n, err := q.Bulk(ctx, lite.BulkDelete, lite.Filter{IDs: []int64{j}})
		deleted <- result{n, err}
	}()
	waitUntilBlockedBy(t, q, pid) // the delete waits for J's row
	is.NoErr(app.Commit())
	got := <-deleted
	is.NoErr(got.err)
	is.Equal(got.n, int64(0)) // J is waited for now: kept
	is.Equal(mustGet(t, q, j).State, lite.StateAvailable)
	is.Equal(mustGet(t, q, k).State, lite.StateBlocked) // still waiting for J, not cancelled
}
