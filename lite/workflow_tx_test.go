package lite_test

import (
	"errors"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestEnqueueWorkflowTx(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		diamond := lite.Workflow{
			Steps: []lite.Step{{Name: "a"}, {Name: "b", After: []string{"a"}}, {Name: "c", After: []string{"a"}},
				{Name: "d", After: []string{"b", "c"}}},
			Batch: &lite.Callback{Kind: "called"},
		}

		t.Run("a rolled-back transaction leaves nothing of the workflow", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tx := mustBegin(t, q)
			out, err := q.EnqueueWorkflowTx(t.Context(), tx, diamond)
			is.NoErr(err)
			is.Equal(len(out.IDs), 4)
			is.NoErr(tx.Rollback())
			is.Equal(countJobs(t, q), 0)
			is.Equal(tableRows(t, q, "lite_deps"), 0)
			is.Equal(tableRows(t, q, "lite_batches"), 0)
		})

		t.Run("a committed one runs as EnqueueWorkflow's does", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			withOrders(t, q)
			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			out, err := q.EnqueueWorkflowTx(t.Context(), tx, diamond)
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(countOrders(t, q), 1)
			is.Equal(stateOf(t, q, out.IDs[3]), lite.StateBlocked)
			for _, id := range out.IDs {
				mustDone(t, q, leaseID(t, q, id), "")
			}
			b, err := q.GetBatch(t.Context(), out.Batch)
			is.NoErr(err)
			is.Equal(b.Done, 4)
			is.Equal(len(jobsOfKind(t, q, "called")), 1)
		})

		t.Run("a refused workflow leaves the caller's transaction usable", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			withOrders(t, q)
			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			_, err = q.EnqueueWorkflowTx(t.Context(), tx, lite.Workflow{Steps: []lite.Step{
				{Name: "a"}, {Name: "b", Job: lite.NewJob{DependsOn: []int64{999}}, After: []string{"a"}}}})
			is.True(errors.Is(err, lite.ErrNotFound)) // job 999 does not exist
			_, err = tx.Exec(`insert into orders values (2)`)
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(countOrders(t, q), 2)
			is.Equal(countJobs(t, q), 0) // step a went with the savepoint
		})
	})
}
