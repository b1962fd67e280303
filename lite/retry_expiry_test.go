package lite_test

import (
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestARetryClearsAnExpiryThatHasPassed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// expired enqueues a job that expires in a minute, lets it expire
		// and returns it, cancelled as expired.
		expired := func(t *testing.T) (*lite.Queue, int64) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{ExpiresIn: time.Minute})
			clock.Advance(2 * time.Minute)
			ids, err := q.CancelExpired(t.Context())
			is.NoErr(err)
			is.Equal(ids, []int64{id})
			return q, id
		}

		t.Run("a retried expired job runs, and is not cancelled again", func(t *testing.T) {
			is := is.New(t)
			q, id := expired(t)
			is.NoErr(q.Retry(t.Context(), id))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.True(j.ExpiresAt.IsZero()) // the past expiry is cleared
			ids, err := q.CancelExpired(t.Context())
			is.NoErr(err)
			is.Equal(len(ids), 0)
			mustDone(t, q, leaseID(t, q, id), "")
		})

		t.Run("a bulk retry clears it too", func(t *testing.T) {
			is := is.New(t)
			q, id := expired(t)
			n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{IDs: []int64{id}})
			is.NoErr(err)
			is.Equal(n, int64(1))
			is.True(mustGet(t, q, id).ExpiresAt.IsZero())
			mustDone(t, q, leaseID(t, q, id), "")
		})

		t.Run("an expiry still to come stays", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{ExpiresIn: time.Hour})
			want := mustGet(t, q, id).ExpiresAt
			is.NoErr(q.Cancel(t.Context(), id))
			is.NoErr(q.Retry(t.Context(), id))
			is.True(mustGet(t, q, id).ExpiresAt.Equal(want))
		})
	})
}
