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
					jobs = []*lite.Job{leaseOnceUnlocked(t, q)}
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

// leaseOnceUnlocked leases the one job of the default queue that a
// cancelled lease took and rolled back. On PostgreSQL the cancelled call
// returns before the server has ended its transaction, which still holds
// the job's row for a moment; a lease skips a row another transaction
// holds, so it finds nothing until then (a lease that waited for the row
// would wait behind every lock an app holds).
func leaseOnceUnlocked(t *testing.T, q *lite.Queue) *lite.Job {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{lite.DefaultQueue}})
		if err != nil {
			t.Fatalf("lease: %v", err)
		}
		switch {
		case len(jobs) == 1:
			return jobs[0]
		case len(jobs) > 1 || time.Now().After(deadline):
			t.Fatalf("lease: got %d jobs, want 1", len(jobs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
