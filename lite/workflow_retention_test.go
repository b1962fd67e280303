package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// tableRows counts the rows of one of lite's tables.
func tableRows(tb testing.TB, q *lite.Queue, table string) int {
	tb.Helper()
	var n int
	if err := q.DB().QueryRowContext(tb.Context(), `select count(*) from `+table).Scan(&n); err != nil {
		tb.Fatalf("count %s: %v", table, err)
	}
	return n
}

// pastRetention is longer than every state's default retention.
const pastRetention = 8 * 24 * time.Hour

func TestRetentionKeepsADependencyUntilItsDependentsHaveFinished(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		a := mustEnqueue(t, q, lite.NewJob{})
		c := mustEnqueue(t, q, lite.NewJob{Delay: time.Hour})
		b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a, c}})
		mustDone(t, q, leaseID(t, q, a), "ra")

		clock.Advance(pastRetention)
		is.Equal(mustClean(t, q).Deleted, int64(0))
		is.Equal(stateOf(t, q, a), lite.StateDone) // b, still blocked on c, will read a's result

		mustDone(t, q, leaseID(t, q, c), "rc")
		running := leaseID(t, q, b)
		clock.Advance(pastRetention)
		is.Equal(mustClean(t, q).Deleted, int64(0)) // b runs: a and c stay for it to read
		deps, err := q.Dependencies(t.Context(), b)
		is.NoErr(err)
		is.Equal(len(deps), 2)
		is.Equal(string(deps[0].Result), "ra")

		mustDone(t, q, running, "")
		clock.Advance(pastRetention)
		is.Equal(mustClean(t, q).Deleted, int64(3)) // b has finished: nothing waits for a or c
	})
}

func TestRetentionPrunesTheEdgesAndBatchesOfJobsItDeleted(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a finished workflow leaves no edge and no batch behind", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			out, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
				Steps: []lite.Step{{Name: "fetch"}, {Name: "resize", After: []string{"fetch"}},
					{Name: "publish", After: []string{"fetch", "resize"}}},
				Batch: &lite.Callback{Kind: "called"},
			})
			is.NoErr(err)
			for _, id := range out.IDs {
				mustDone(t, q, leaseID(t, q, id), "")
			}
			is.Equal(tableRows(t, q, "lite_deps"), 3)
			is.Equal(tableRows(t, q, "lite_batches"), 1)
			clock.Advance(pastRetention)
			mustClean(t, q)
			is.Equal(tableRows(t, q, "lite_deps"), 0)
			is.Equal(tableRows(t, q, "lite_batches"), 0)
			_, err = q.GetBatch(t.Context(), out.Batch)
			is.True(errors.Is(err, lite.ErrNotFound))
			is.Equal(len(jobsOfKind(t, q, "called")), 1) // the callback is a job of its own, kept to its own retention
		})

		t.Run("an edge and a batch stay while one of their jobs does", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			out, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
				Steps: []lite.Step{{Name: "a"}, {Name: "b", After: []string{"a"}}},
				Batch: &lite.Callback{Kind: "called"},
			})
			is.NoErr(err)
			a, b := out.IDs[0], out.IDs[1]
			is.NoErr(q.Cancel(t.Context(), b))
			n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{IDs: []int64{b}})
			is.NoErr(err)
			is.Equal(n, int64(1))
			is.Equal(tableRows(t, q, "lite_deps"), 1)    // a is still there
			is.Equal(tableRows(t, q, "lite_batches"), 1) // and still in the batch
			mustDone(t, q, leaseID(t, q, a), "")
			clock.Advance(pastRetention)
			mustClean(t, q) // deletes a, the last of both
			is.Equal(tableRows(t, q, "lite_deps"), 0)
			is.Equal(tableRows(t, q, "lite_batches"), 0)
		})

		t.Run("an edge stays while its dependent does", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			a := mustEnqueue(t, q, lite.NewJob{})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			mustDone(t, q, leaseID(t, q, a), "")
			mustDone(t, q, leaseID(t, q, b), "")
			for i, id := range []int64{a, b} {
				n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{IDs: []int64{id}})
				is.NoErr(err)
				is.Equal(n, int64(1))
				is.Equal(tableRows(t, q, "lite_deps"), 1-i) // pruned with the second of its jobs
			}
		})

		t.Run("a purge prunes too", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			a := mustEnqueue(t, q, lite.NewJob{})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			mustDone(t, q, leaseID(t, q, a), "")
			mustDone(t, q, leaseID(t, q, b), "")
			n, err := q.Purge(t.Context(), time.Now().Add(100*365*24*time.Hour))
			is.NoErr(err)
			is.Equal(n, int64(2))
			is.Equal(tableRows(t, q, "lite_deps"), 0)
		})
	})
}
