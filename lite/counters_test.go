package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestCountersSurviveRetention(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("every way to a state counts, and deleting the jobs takes nothing back", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			ids := jobsInEveryState(t, q, "q")             // one done, dead, cancelled, running, available
			mustEnqueue(t, q, lite.NewJob{Queue: "other"}) // a queue with nothing finished
			is.NoErr(q.Cancel(t.Context(), ids[lite.StateRunning]))
			is.NoErr(q.Retry(t.Context(), ids[lite.StateDead]))
			n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{IDs: []int64{ids[lite.StateCancelled]}})
			is.NoErr(err)
			is.Equal(n, int64(1))
			again := mustEnqueue(t, q, lite.NewJob{Queue: "r", MaxAttempts: 2})
			j := mustLeaseOne(t, q, "r")
			is.Equal(j.ID, again)
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("once"))) // back to available: no retry
			want := []lite.Counters{{Queue: "q", Done: 1, Dead: 1, Cancelled: 2, Retried: 2}}
			got, err := q.Counters(t.Context())
			is.NoErr(err)
			is.Equal(got, want)

			_, err = q.Purge(t.Context(), time.Now().Add(time.Hour))
			is.NoErr(err)
			_, err = q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{})
			is.NoErr(err)
			got, err = q.Counters(t.Context())
			is.NoErr(err)
			// The jobs are gone, their counts stay; the unstarted ones a
			// delete took count as cancelled (a delete cancels them first,
			// so that their batches count them out).
			want = []lite.Counters{{Queue: "other", Cancelled: 1}, {Queue: "q", Done: 1, Dead: 1, Cancelled: 5, Retried: 2}, {Queue: "r", Cancelled: 1}}
			is.Equal(got, want)
		})
	})
}
