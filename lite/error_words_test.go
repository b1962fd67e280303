package lite_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestErrorsSayWhatHappened(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("an expired job's Err says it expired", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{ExpiresIn: time.Minute})
			clock.Advance(2 * time.Minute)
			_, err := q.CancelExpired(t.Context())
			is.NoErr(err)
			err = mustGet(t, q, id).Err()
			is.True(errors.Is(err, lite.ErrCancelled))
			is.True(strings.HasPrefix(err.Error(), "job 1 expired: not started by ")) // not a bare "cancelled"
		})

		t.Run("a context that ends inside a batch is reported as itself, not as a job's failure", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			for _, jobs := range [][]lite.NewJob{
				{{UniqueKey: "a"}, {UniqueKey: "b"}}, // one statement each
				{{}},
			} {
				tx, err := q.DB().BeginTx(t.Context(), nil)
				is.NoErr(err)
				_, err = lite.InsertBatch(ctx, q, tx, jobs)
				is.True(errors.Is(err, context.Canceled))
				is.Equal(err.Error(), "context canceled") // no "job 0: ": job 0 did nothing wrong
				is.NoErr(tx.Rollback())
			}
		})
	})
}
