package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// stamp is an enqueue middleware that stamps each job's Meta with from
// and counts the jobs it saw and the outcomes it got.
type stamp struct {
	jobs, ok int
	errs     []error
}

func (s *stamp) middleware(from string) lite.EnqueueMiddleware {
	return func(next lite.EnqueueFunc) lite.EnqueueFunc {
		return func(ctx context.Context, jobs []lite.NewJob) ([]lite.Enqueued, error) {
			for i := range jobs {
				if jobs[i].Meta == nil {
					jobs[i].Meta = map[string]string{}
				}
				jobs[i].Meta["by"] += from
				s.jobs++
			}
			out, err := next(ctx, jobs)
			if err != nil {
				s.errs = append(s.errs, err)
			}
			s.ok += len(out)
			return out, err
		}
	}
}

func TestEnqueueMiddleware(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		open := func(t *testing.T, mws ...lite.EnqueueMiddleware) *lite.Queue {
			q, _ := e.open(t, lite.Options{EnqueueMiddleware: mws})
			return q
		}
		inTx := func(t *testing.T, q *lite.Queue, fn func(tx *sql.Tx)) {
			is := is.New(t)
			tx, err := q.DB().BeginTx(t.Context(), nil)
			is.NoErr(err)
			fn(tx)
			is.NoErr(tx.Commit())
		}

		t.Run("every way to enqueue goes through the chain, the first outermost", func(t *testing.T) {
			is := is.New(t)
			s := &stamp{}
			q := open(t, s.middleware("1"), s.middleware("2"))
			ctx := t.Context()
			var got []int64
			id, err := q.Enqueue(ctx, lite.NewJob{})
			is.NoErr(err)
			got = append(got, id)
			inTx(t, q, func(tx *sql.Tx) {
				id, err := q.EnqueueTx(ctx, tx, lite.NewJob{})
				is.NoErr(err)
				got = append(got, id)
				out, err := q.EnqueueBatchTx(ctx, tx, []lite.NewJob{{}, {}})
				is.NoErr(err)
				got = append(got, out[0].ID, out[1].ID)
				wf, err := q.EnqueueWorkflowTx(ctx, tx, lite.Workflow{Steps: []lite.Step{{Name: "a"}, {After: []string{"a"}}}})
				is.NoErr(err)
				got = append(got, wf.IDs...)
			})
			// A workflow's steps and a batch's jobs, every one of them.
			wf, err := q.EnqueueWorkflow(ctx, lite.Workflow{Steps: []lite.Step{{Name: "a"}, {After: []string{"a"}}, {}},
				Batch: &lite.Callback{Kind: "all-done"}})
			is.NoErr(err)
			got = append(got, wf.IDs...)
			out, err := q.EnqueueBatch(ctx, []lite.NewJob{{}, {}})
			is.NoErr(err)
			got = append(got, out[0].ID, out[1].ID)
			id, err = lite.EnqueueArgs(ctx, q, tagged{})
			is.NoErr(err)
			got = append(got, id)
			for _, id := range got {
				is.Equal(mustGet(t, q, id).Meta, map[string]string{"by": "12"})
			}
			is.Equal(s.jobs, 2*len(got)) // each middleware saw each job once
			is.Equal(s.ok, 2*len(got))
		})

		t.Run("the caller's jobs and maps are left as they were", func(t *testing.T) {
			is := is.New(t)
			q := open(t, (&stamp{}).middleware("x"))
			mine := map[string]string{"by": "me "}
			jobs := []lite.NewJob{{Meta: mine}}
			out, err := q.EnqueueBatch(t.Context(), jobs)
			is.NoErr(err)
			is.Equal(mine, map[string]string{"by": "me "})
			is.Equal(mustGet(t, q, out[0].ID).Meta, map[string]string{"by": "me x"})
		})

		t.Run("a middleware sees the outcome, a held unique key too", func(t *testing.T) {
			is := is.New(t)
			s := &stamp{}
			q := open(t, s.middleware("x"))
			first, err := q.Enqueue(t.Context(), lite.NewJob{UniqueKey: "k"})
			is.NoErr(err)
			again, err := q.Enqueue(t.Context(), lite.NewJob{UniqueKey: "k"})
			is.True(errors.Is(err, lite.ErrDuplicate))
			is.Equal(again, first) // the holder's id, through the chain
			is.Equal(len(s.errs), 1)
			is.True(errors.Is(s.errs[0], lite.ErrDuplicate))
		})

		t.Run("a middleware's error refuses the enqueue", func(t *testing.T) {
			is := is.New(t)
			refuse := func(lite.EnqueueFunc) lite.EnqueueFunc {
				return func(context.Context, []lite.NewJob) ([]lite.Enqueued, error) {
					return nil, errors.New("quota spent")
				}
			}
			q := open(t, refuse)
			_, err := q.Enqueue(t.Context(), lite.NewJob{})
			is.Equal(err.Error(), "quota spent")
			_, err = q.EnqueueBatch(t.Context(), []lite.NewJob{{}})
			is.True(err != nil)
			jobs, err := q.List(t.Context(), lite.ListFilter{})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
		})

		t.Run("a middleware that drops a job is refused, not half obeyed", func(t *testing.T) {
			is := is.New(t)
			drop := func(next lite.EnqueueFunc) lite.EnqueueFunc {
				return func(ctx context.Context, jobs []lite.NewJob) ([]lite.Enqueued, error) {
					return next(ctx, jobs[1:])
				}
			}
			q := open(t, drop)
			_, err := q.EnqueueBatch(t.Context(), []lite.NewJob{{}, {}})
			is.True(err != nil)
			_, err = q.Enqueue(t.Context(), lite.NewJob{})
			is.True(err != nil)
			jobs, err := q.List(t.Context(), lite.ListFilter{})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
		})
	})
}
