package lite_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestNoJobStartsOnceAPauseHasReturned pauses a queue over and over while
// four connection pools lease from it: once Pause has returned, no lease
// that was under way may still start one of its jobs. Each round counts
// the started jobs when Pause returns and again after every leaser has
// finished a lease begun after it.
func TestNoJobStartsOnceAPauseHasReturned(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		if e.name != "postgres" {
			t.Skip("a SQLite lease holds the file's one write lock, which a pause waits for")
		}
		is := is.New(t)
		ctx := t.Context()
		q, dsn := e.mustOpen(t, nil)
		jobs := make([]lite.NewJob, 4000)
		for i := range jobs {
			jobs[i] = lite.NewJob{Queue: "q"}
		}
		_, err := q.EnqueueBatch(ctx, jobs)
		is.NoErr(err)
		started := func() int64 { return statsOf(t, q, "q").Counts[lite.StateRunning] }

		const leasers = 4
		var (
			stop  atomic.Bool
			wg    sync.WaitGroup
			calls [leasers]atomic.Int64 // leases each leaser has finished
		)
		for i := range leasers {
			l := mustOpenOpts(t, dsn, lite.Options{})
			wg.Go(func() {
				for !stop.Load() {
					if _, err := l.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, Max: 2}); err != nil {
						t.Errorf("lease: %v", err)
						return
					}
					calls[i].Add(1)
				}
			})
		}
		// waitLeases returns once every leaser has finished two more leases,
		// so that one of them began after this call.
		waitLeases := func() {
			var from [leasers]int64
			for i := range calls {
				from[i] = calls[i].Load()
			}
			for i := range calls {
				for calls[i].Load() < from[i]+2 && !t.Failed() {
					runtime.Gosched()
				}
			}
		}
		for range 12 {
			waitLeases()
			is.NoErr(q.Pause(ctx, "q"))
			before := started()
			waitLeases()
			is.Equal(started(), before) // why: a lease under way when Pause returned started a job
			is.NoErr(q.Resume(ctx, "q"))
		}
		stop.Store(true)
		wg.Wait()
		is.True(started() < int64(len(jobs))) // the queue never ran dry, so every round could have failed
	})
}
