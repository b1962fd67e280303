package lite_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestEveryWayOutCountsAJobInItsBatch: a batch of two jobs, one done;
// the other leaves by each way there is, and the batch calls back once.
func TestEveryWayOutCountsAJobInItsBatch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ways := []struct {
			name  string
			state lite.State // how the batch counts it
			leave func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64)
		}{
			{"done", lite.StateDone, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				j := mustLeaseOne(t, q, "q")
				is.New(t).NoErr(q.AckDone(t.Context(), j.Lease(), nil))
			}},
			{"cancel", lite.StateCancelled, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				is.New(t).NoErr(q.Cancel(t.Context(), id))
			}},
			{"expiry", lite.StateCancelled, func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64) {
				clock.Advance(2 * time.Hour)
				_, err := q.CancelExpired(t.Context())
				is.New(t).NoErr(err)
			}},
			{"delete before it started", lite.StateCancelled, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				is := is.New(t)
				n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{IDs: []int64{id}})
				is.NoErr(err)
				is.Equal(n, int64(1))
			}},
			{"done, then purged", lite.StateDone, func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64) {
				is := is.New(t)
				j := mustLeaseOne(t, q, "q")
				is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				clock.Advance(time.Minute)
				n, err := q.Purge(t.Context(), clock.Now())
				is.NoErr(err)
				is.True(n >= 1)
			}},
			{"done, then past its retention", lite.StateDone, func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64) {
				is := is.New(t)
				is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: time.Minute, Cancelled: time.Minute, Dead: time.Minute}))
				j := mustLeaseOne(t, q, "q")
				is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				clock.Advance(time.Hour)
				rep, err := q.Clean(t.Context())
				is.NoErr(err)
				is.True(rep.Deleted >= 1)
			}},
		}
		for _, way := range ways {
			t.Run("a batch's last job leaving by "+way.name+" calls the batch back once", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				out, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
					Steps: []lite.Step{
						{Name: "first", Job: lite.NewJob{Queue: "q"}},
						{Name: "last", Job: lite.NewJob{Queue: "q", ExpiresIn: time.Hour}},
					},
					Batch: &lite.Callback{Queue: "cb", Kind: "report"},
				})
				is.NoErr(err)
				b, err := q.GetBatch(t.Context(), out.Batch)
				is.NoErr(err)
				j := mustLeaseOne(t, q, "q")
				is.Equal(j.ID, out.IDs[0])
				is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				is.Equal(callbacks(t, q), 0)

				way.leave(t, q, clock, out.IDs[1])
				jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"cb"}, Max: 10})
				is.NoErr(err)
				is.Equal(len(jobs), 1) // called back once, due now
				is.Equal(jobs[0].Meta["lite.batch"], strconv.FormatInt(b.ID, 10))
				counts := jobs[0].Meta["lite.done"] + "/" + jobs[0].Meta["lite.cancelled"]
				want := map[lite.State]string{lite.StateDone: "2/0", lite.StateCancelled: "1/1"}[way.state]
				is.Equal(counts, want)
			})
		}

		t.Run("a batch of no steps is refused, and nothing is stored", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			_, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Batch: &lite.Callback{Queue: "cb", Kind: "report"}})
			is.True(err != nil && strings.Contains(err.Error(), "never call back"))
			_, err = q.GetBatch(t.Context(), 1)
			is.True(errors.Is(err, lite.ErrNotFound))
		})
	})
}

// callbacks counts the batch callbacks enqueued on queue cb.
func callbacks(tb testing.TB, q *lite.Queue) int {
	n, err := q.Unfinished(tb.Context(), []string{"cb"})
	if err != nil {
		tb.Fatal(err)
	}
	return int(n)
}
