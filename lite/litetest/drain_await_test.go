package litetest_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

// One Drain runs a parent to its Await, its children, and the parent
// again: the end of the last child makes it available within the drain.
func TestDrainRunsAnAwaitingParentItsChildrenAndTheParentAgain(t *testing.T) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
		is := is.New(t)
		q, _ := e.Open(t)
		w := newWorker(t, q, lite.WorkerOptions{})
		w.Handle("square", func(ctx context.Context, job *lite.Job) error {
			lite.SetResult(ctx, append([]byte{}, job.Payload...))
			return nil
		})
		var sum int
		w.Handle("sum", func(ctx context.Context, job *lite.Job) error {
			ids, err := lite.RunStepTx(ctx, "children", func(ctx context.Context, tx *sql.Tx) ([]int64, error) {
				var ids []int64
				for n := 1; n <= 3; n++ {
					id, err := q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "square", Queue: "children", Payload: fmt.Appendf(nil, "%d", n*n)})
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
			outcomes, err := lite.Await(ctx, ids...)
			if err != nil {
				return err
			}
			for _, o := range outcomes {
				n, err := lite.ResultOf[int](o)
				if err != nil {
					return err
				}
				sum += n
			}
			return nil
		})
		_, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "sum"})
		is.NoErr(err)
		rep := litetest.Drain(t, w)
		is.Equal(rep.Parked, 1)
		is.Equal(rep.Done, 4) // the three children and the parent
		is.Equal(sum, 14)
	})
}
