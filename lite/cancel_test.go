package lite_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// cancelSoon returns a context that a random moment from now cancels: in
// some tries before the call starts, in some while its statement runs, in
// some after it returned.
func cancelSoon(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	// why: a random moment spread over a statement's length; nothing is timed
	time.AfterFunc(time.Duration(rand.N(400))*time.Microsecond, cancel)
	return ctx
}

func TestACancelledCallNeverHidesACommittedWrite(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		tries := scaled(300)
		t.Run("an ack that returns an error wrote nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			for range tries {
				id := mustEnqueue(t, q, lite.NewJob{})
				j := mustLeaseOne(t, q, lite.DefaultQueue)
				err := q.AckDone(cancelSoon(t), j.Lease(), []byte("ok"))
				got := mustGet(t, q, id)
				if err != nil {
					is.Equal(got.State, lite.StateRunning) // an error means nothing was written
					is.NoErr(q.AckDone(t.Context(), j.Lease(), []byte("ok")))
				} else {
					is.Equal(got.State, lite.StateDone)
				}
			}
		})

		t.Run("a lease that returns an error leased nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			for range tries {
				mustEnqueue(t, q, lite.NewJob{})
				jobs, err := q.Lease(cancelSoon(t), lite.LeaseRequest{})
				stats, serr := q.Stats(t.Context())
				is.NoErr(serr)
				running := stats[0].Counts[lite.StateRunning]
				if err != nil {
					is.Equal(running, int64(0)) // an error means nothing was leased
					jobs = []*lite.Job{mustLeaseOne(t, q, lite.DefaultQueue)}
				} else {
					is.Equal(running, int64(len(jobs)))
				}
				for _, j := range jobs {
					is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				}
			}
		})

		t.Run("an enqueue that returns an error stored nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			stored := 0
			for range tries {
				_, err := q.Enqueue(cancelSoon(t), lite.NewJob{})
				if err == nil {
					stored++
				}
				is.Equal(countJobs(t, q), stored)
			}
		})

		t.Run("a batch ack that returns an error wrote nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			for range tries {
				id := mustEnqueue(t, q, lite.NewJob{})
				j := mustLeaseOne(t, q, lite.DefaultQueue)
				_, err := q.AckDoneMany(cancelSoon(t), []lite.Done{{Lease: j.Lease()}})
				if err != nil {
					is.Equal(mustGet(t, q, id).State, lite.StateRunning)
					is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				}
				is.Equal(mustGet(t, q, id).State, lite.StateDone)
			}
		})

		t.Run("an already cancelled context stops a write before it starts", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{})
			j := mustLeaseOne(t, q, lite.DefaultQueue)
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			is.True(errors.Is(q.AckDone(ctx, j.Lease(), nil), context.Canceled))
			_, err := q.Enqueue(ctx, lite.NewJob{})
			is.True(errors.Is(err, context.Canceled))
			is.Equal(mustGet(t, q, id).State, lite.StateRunning)
			is.Equal(countJobs(t, q), 1)
		})
	})
}
