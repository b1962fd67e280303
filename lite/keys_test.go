package lite_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAnExpiredJobNeverRuns(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a lease takes a job before its expiry and none after it", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			soon := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Minute})
			later := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresAt: clock.Now().Add(time.Hour)})
			is.True(mustGet(t, q, soon).ExpiresAt.Equal(clock.Now().Add(time.Minute)))
			clock.Advance(time.Minute) // the expiry is the last instant it may not start
			got := leaseN(t, q, "q", 5)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, later)
			is.Equal(mustGet(t, q, soon).State, lite.StateAvailable) // refused, not yet cancelled
		})

		t.Run("run it now refuses an expired job", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			var calls atomic.Int32
			w.Handle("default", func(ctx context.Context, job *lite.Job) error { calls.Add(1); return nil })
			id := mustEnqueue(t, q, lite.NewJob{ExpiresIn: time.Second})
			clock.Advance(2 * time.Second)
			_, err := w.RunJob(t.Context(), id)
			is.True(err != nil)
			is.Equal(calls.Load(), int32(0))
		})

		t.Run("the reclaim pass cancels an expired job with the reason", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			expired := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Second})
			kept := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Hour})
			running := mustEnqueue(t, q, lite.NewJob{Queue: "r", ExpiresIn: time.Second})
			mustLeaseOne(t, q, "r")
			clock.Advance(2 * time.Second)
			is.NoErr(w.Reclaim(t.Context()))
			j := mustGet(t, q, expired)
			is.Equal(j.State, lite.StateCancelled)
			is.Equal(len(j.Errors), 1)
			is.True(strings.HasPrefix(j.Errors[0].Error, "expired: not started by 2026-01-02T03:04:06.000Z")) // the reason, with the expiry
			is.Equal(mustGet(t, q, kept).State, lite.StateAvailable)
			is.Equal(mustGet(t, q, running).State, lite.StateRunning) // it started in time
			ids, err := q.CancelExpired(t.Context())
			is.NoErr(err)
			is.Equal(len(ids), 0) // each job expires once
		})

		t.Run("a batch keeps each job's expiry and key", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			out, err := q.EnqueueBatch(t.Context(), []lite.NewJob{
				{Queue: "q", ExpiresIn: time.Minute, Key: "k"}, {Queue: "q"}})
			is.NoErr(err)
			a, b := mustGet(t, q, out[0].ID), mustGet(t, q, out[1].ID)
			is.True(a.ExpiresAt.Equal(clock.Now().Add(time.Minute)))
			is.Equal(a.Key, "k")
			is.True(b.ExpiresAt.IsZero())
			is.Equal(b.Key, "")
		})

		t.Run("bad expiries and keys are refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			for _, j := range []lite.NewJob{
				{ExpiresIn: -time.Second},
				{ExpiresIn: time.Second, ExpiresAt: time.Now()},
				{ExpiresAt: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)},
				{Key: "a\x00b"},
				{Key: strings.Repeat("k", lite.MaxKeyBytes+1)},
			} {
				_, err := q.Enqueue(t.Context(), j)
				is.True(err != nil)
			}
		})
	})
}

// enqueueKeyed enqueues one job of queue q per key given, in order, and
// returns their ids.
func enqueueKeyed(t *testing.T, q *lite.Queue, keys ...string) []int64 {
	t.Helper()
	ids := make([]int64, len(keys))
	for i, k := range keys {
		ids[i] = mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: k, MaxAttempts: 1})
	}
	return ids
}

// keysOf lists the keys of jobs, sorted.
func keysOf(jobs []*lite.Job) []string {
	keys := make([]string, len(jobs))
	for i, j := range jobs {
		keys[i] = j.Key
	}
	slices.Sort(keys)
	return keys
}

func TestAPerKeyLimitHolds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a lease takes up to the limit of each key and walks past a key's backlog", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 2}))
			enqueueKeyed(t, q, "a", "a", "a", "a", "a", "a", "b", "b", "b", "", "")
			got := leaseN(t, q, "q", 20)
			is.Equal(keysOf(got), []string{"", "", "a", "a", "b", "b"}) // jobs without a key are not limited
			is.Equal(len(leaseN(t, q, "q", 20)), 0)
			a := got[slices.IndexFunc(got, func(j *lite.Job) bool { return j.Key == "a" })]
			is.NoErr(q.AckDone(t.Context(), a.Lease(), nil))
			again := leaseN(t, q, "q", 20)
			is.Equal(keysOf(again), []string{"a"}) // its slot came back, one
		})

		t.Run("a lease of one job takes the next key's job when the first key is full", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 1}))
			enqueueKeyed(t, q, "a", "a", "a", "b")
			is.Equal(keysOf(leaseN(t, q, "q", 1)), []string{"a"})
			is.Equal(keysOf(leaseN(t, q, "q", 1)), []string{"b"})
		})

		t.Run("a job without a key is leased while its queue's keys are full", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 1}))
			enqueueKeyed(t, q, "a", "a", "a")
			is.Equal(keysOf(leaseN(t, q, "", 10)), []string{"a"})
			enqueueKeyed(t, q, "")
			mustEnqueue(t, q, lite.NewJob{Queue: "other"})
			got := leaseN(t, q, "", 10)
			is.Equal(len(got), 2) // the job without a key, and the other queue's
			is.Equal(keysOf(got), []string{"", ""})
			enqueueKeyed(t, q, "")
			is.Equal(keysOf(leaseN(t, q, "q", 10)), []string{""})
		})

		t.Run("the limit and the queue's MaxRunning both hold", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunning: 3, MaxRunningPerKey: 2}))
			enqueueKeyed(t, q, "a", "a", "a", "b", "b")
			is.Equal(len(leaseN(t, q, "q", 10)), 3)
		})

		t.Run("leases at once on separate connections never run more than the limit per key", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			opts := lite.Options{Now: clock.Now}
			q, dsn := e.open(t, opts)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 2}))
			const jobs = 120
			keys := make([]string, jobs)
			for i := range keys {
				keys[i] = string(rune('a' + i%3))
			}
			enqueueKeyed(t, q, keys...)
			// held counts each key's leases from after their lease commits
			// to before their ack does, so it never exceeds what the file
			// holds.
			var mu sync.Mutex
			held, most := map[string]int{}, 0
			var done atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				c := mustOpenOpts(t, dsn, opts)
				wg.Go(func() {
					for done.Load() < jobs {
						got, err := c.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 4})
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for _, j := range got {
							held[j.Key]++
							most = max(most, held[j.Key])
						}
						mu.Unlock()
						for _, j := range got {
							mu.Lock()
							held[j.Key]--
							mu.Unlock()
							if err := c.AckDone(t.Context(), j.Lease(), nil); err != nil {
								t.Error(err)
								return
							}
							done.Add(1)
						}
					}
				})
			}
			wg.Wait()
			is.Equal(done.Load(), int64(jobs))
			is.True(most <= 2) // the limit held per key across every connection
			is.True(most >= 1)
		})
	})
}

func TestASequenceRunsEachKeyInOrder(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("one job of each key runs at a time, in enqueue order", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceContinue}))
			ids := enqueueKeyed(t, q, "a", "b", "a", "a", "b")
			order := map[string][]int64{}
			seen := 0
			for range 5 {
				got := leaseN(t, q, "q", 10)
				is.True(len(got) >= 1)
				keys := keysOf(got)
				is.Equal(len(slices.Compact(slices.Clone(keys))), len(keys)) // one per key
				for _, j := range got {
					order[j.Key] = append(order[j.Key], j.ID)
					seen++
					is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				}
				if seen == len(ids) {
					break
				}
			}
			is.Equal(order["a"], []int64{ids[0], ids[2], ids[3]}) // each key's jobs in enqueue order
			is.Equal(order["b"], []int64{ids[1], ids[4]})
		})

		t.Run("a running job holds its key until it ends", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceContinue}))
			ids := enqueueKeyed(t, q, "a", "a")
			j := mustLeaseOne(t, q, "q")
			is.Equal(j.ID, ids[0])
			is.Equal(len(leaseN(t, q, "q", 10)), 0) // the next waits for the one running
			is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
			is.Equal(leaseN(t, q, "q", 10)[0].ID, ids[1])
		})

		t.Run("a failed job waiting to retry holds its key", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceContinue}))
			first := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a", MaxAttempts: 3})
			mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a"})
			j := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("boom")))
			is.Equal(len(leaseN(t, q, "q", 10)), 0) // neither the retry before its time nor the job after it
			clock.Advance(time.Hour)
			got := leaseN(t, q, "q", 10)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, first) // the retry, not the job after it
		})

		t.Run("a job waiting for its dependencies holds its key's place", func(t *testing.T) {
			for _, seq := range []lite.Sequence{lite.SequenceContinue, lite.SequenceBlock} {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: seq}))
				dep := mustEnqueue(t, q, lite.NewJob{Queue: "other"})
				blocked := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a", DependsOn: []int64{dep}})
				later := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a"})
				is.Equal(len(leaseN(t, q, "q", 10)), 0) // the later job waits for the blocked one
				d := mustLeaseOne(t, q, "other")
				is.NoErr(q.AckDone(t.Context(), d.Lease(), nil))
				j := mustLeaseOne(t, q, "q")
				is.Equal(j.ID, blocked) // first in its key's sequence, once its dependency is done
				is.Equal(len(leaseN(t, q, "q", 10)), 0)
				is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
				is.Equal(mustLeaseOne(t, q, "q").ID, later)
			}
		})

		t.Run("continue runs the next job after a dead one, block holds the key", func(t *testing.T) {
			for _, seq := range []lite.Sequence{lite.SequenceContinue, lite.SequenceBlock} {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: seq}))
				ids := enqueueKeyed(t, q, "a", "a")
				j := mustLeaseOne(t, q, "q")
				is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("boom"))) // its only attempt: dead
				got := leaseN(t, q, "q", 10)
				if seq == lite.SequenceBlock {
					is.Equal(len(got), 0)
					is.NoErr(q.Retry(t.Context(), ids[0]))
					got = leaseN(t, q, "q", 10)
					is.Equal(len(got), 1)
					is.Equal(got[0].ID, ids[0]) // the retried job, still first
					continue
				}
				is.Equal(len(got), 1)
				is.Equal(got[0].ID, ids[1])
			}
		})

		t.Run("a cancelled job holds the key under block", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceBlock}))
			ids := enqueueKeyed(t, q, "a", "a", "b")
			is.NoErr(q.Cancel(t.Context(), ids[0]))
			got := leaseN(t, q, "q", 10)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, ids[2]) // b goes on; a waits on its cancelled job
		})
	})
}

// TestAKeyedLeaseOnPostgresCountsAfterTheLeaseBeforeIt freezes one
// host's lease of a queue with a per-key limit once it holds the queue's
// row: the other host's lease of that queue waits for it, and so counts
// the key's running jobs after the frozen lease commits, never beside it.
// Without the lock, both would count the key free and each start a job.
func TestAKeyedLeaseOnPostgresCountsAfterTheLeaseBeforeIt(t *testing.T) {
	e := onPostgres(t)
	for _, l := range []lite.Limits{{MaxRunningPerKey: 1}, {Sequence: lite.SequenceContinue}} {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		first, dsn := e.mustOpen(t, newFakeClock())
		second := mustOpenOpts(t, dsn, lite.Options{})
		is.NoErr(first.SetLimits(ctx, "q", l))
		enqueueKeyed(t, first, "a", "a")
		hook, frozen, thaw := freezeFirst(t)
		lite.FreezeAfterFlowLock(t, hook)
		ended := make(chan string, 2)
		lease := func(name string, q *lite.Queue) {
			jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, Max: 2})
			if err != nil {
				t.Error(err)
			}
			ended <- name + ":" + strconv.Itoa(len(jobs))
		}
		go lease("first", first)
		select {
		case <-frozen:
		case got := <-ended:
			t.Fatalf("%s: the first lease took no lock of its keyed queue", got)
		}
		go lease("second", second)
		select {
		case got := <-ended: // the second did not wait for the first's lock
			thaw()
			t.Fatalf("%s ended while the first lease held its queue's row", got)
		case <-time.After(300 * time.Millisecond):
		}
		thaw()
		is.Equal(<-ended, "first:1")
		is.Equal(<-ended, "second:0") // it counted the first's job as running
	}
}

func TestNextRunAtLeavesOutExpiredJobsAndHoldsKeyedOnes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("an expired job gives no run time, so an idle worker does not spin on it", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Second})
			clock.Advance(time.Second)
			at, held, err := lite.NextRunAt(t.Context(), q, []string{"q"})
			is.NoErr(err)
			is.True(at.IsZero())
			is.True(!held)
		})

		t.Run("a ready job its key holds back waits for a slot, not for a time", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 1}))
			enqueueKeyed(t, q, "a", "a")
			mustLeaseOne(t, q, "q")
			at, held, err := lite.NextRunAt(t.Context(), q, []string{"q"})
			is.NoErr(err)
			is.True(at.IsZero())
			is.True(held)
		})
	})
}

func TestAJobThatStartedInTimeRunsToItsEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a job reclaimed after its expiry is leased again and never cancelled", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: 4 * time.Second})
			_, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, StaleAfter: 3 * time.Second})
			is.NoErr(err)
			clock.Advance(5 * time.Second) // its worker froze past both its lease and the expiry
			got, err := q.ReclaimOrphaned(ctx)
			is.NoErr(err)
			is.Equal(len(got), 1)
			ids, err := q.CancelExpired(ctx)
			is.NoErr(err)
			is.Equal(len(ids), 0) // it started in time
			at, _, err := lite.NextRunAt(ctx, q, []string{"q"})
			is.NoErr(err)
			is.True(!at.IsZero()) // a worker stopping when idle waits for it
			again := leaseN(t, q, "q", 1)
			is.Equal(len(again), 1)
			is.Equal(again[0].ID, id)
		})

		t.Run("a failed attempt past the expiry is retried", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Second, MaxAttempts: 3})
			j := mustLeaseOne(t, q, "q")
			_, err := q.Fail(ctx, j.Lease(), errors.New("boom"), nil)
			is.NoErr(err)
			clock.Advance(time.Minute) // past the backoff and the expiry
			ids, err := q.CancelExpired(ctx)
			is.NoErr(err)
			is.Equal(len(ids), 0)
			again := leaseN(t, q, "q", 1)
			is.Equal(len(again), 1)
			is.Equal(again[0].ID, id)
		})

		t.Run("a dead job retried by hand after its expiry runs again", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresIn: time.Second, MaxAttempts: 1})
			_, err := q.Fail(ctx, mustLeaseOne(t, q, "q").Lease(), errors.New("boom"), nil)
			is.NoErr(err)
			clock.Advance(time.Minute)
			is.NoErr(q.Retry(ctx, id)) // its attempts start again; it still started in time
			ids, err := q.CancelExpired(ctx)
			is.NoErr(err)
			is.Equal(len(ids), 0)
			is.Equal(len(leaseN(t, q, "q", 1)), 1)
		})
	})
}

func TestAJobThatCouldNeverStartIsRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("an expiry by the run time is invalid, one after it is kept", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			_, err := q.Enqueue(ctx, lite.NewJob{Delay: 2 * time.Minute, ExpiresIn: time.Minute})
			is.True(errors.Is(err, lite.ErrInvalid))
			at := clock.Now().Add(time.Hour)
			_, err = q.EnqueueBatch(ctx, []lite.NewJob{{}, {RunAt: at, ExpiresAt: at}})
			is.True(errors.Is(err, lite.ErrInvalid))
			id := mustEnqueue(t, q, lite.NewJob{RunAt: at, ExpiresAt: at.Add(time.Millisecond)})
			is.True(mustGet(t, q, id).ExpiresAt.Equal(at.Add(time.Millisecond)))
			mustEnqueue(t, q, lite.NewJob{ExpiresAt: clock.Now()}) // due now: taken, and cancelled by the expiry pass
		})
	})
}

func TestAKeysJobsWaitForTheirTime(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a key's job not yet due takes none of its slots", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 2}))
			mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a", Priority: 9, Delay: time.Hour})
			first := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a"})
			got := leaseN(t, q, "q", 10)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, first) // the key runs nothing yet
			second := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "a"})
			got = leaseN(t, q, "q", 10)
			is.Equal(len(got), 1)
			is.Equal(got[0].ID, second) // and now that it runs one
		})
	})
}

func TestRunItNowHoldsAKeysLimits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		setup := func(t *testing.T, l lite.Limits) (*lite.Queue, *lite.Worker, *atomic.Int32) {
			q, _ := e.mustOpen(t, newFakeClock())
			if err := q.SetLimits(t.Context(), "q", l); err != nil {
				t.Fatal(err)
			}
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			var calls atomic.Int32
			w.Handle("default", func(context.Context, *lite.Job) error { calls.Add(1); return nil })
			return q, w, &calls
		}

		t.Run("a job whose key runs as many as its limit is refused", func(t *testing.T) {
			is := is.New(t)
			q, w, calls := setup(t, lite.Limits{MaxRunningPerKey: 1})
			ids := enqueueKeyed(t, q, "a", "a", "b")
			mustLeaseOne(t, q, "q")
			_, err := w.RunJob(t.Context(), ids[1])
			is.True(err != nil)
			is.Equal(calls.Load(), int32(0))
			_, err = w.RunJob(t.Context(), ids[2]) // another key's job runs
			is.NoErr(err)
			is.Equal(calls.Load(), int32(1))
		})

		t.Run("a sequence's later job is refused until the ones before it end", func(t *testing.T) {
			is := is.New(t)
			q, w, calls := setup(t, lite.Limits{Sequence: lite.SequenceContinue})
			ids := enqueueKeyed(t, q, "a", "a")
			_, err := w.RunJob(t.Context(), ids[1])
			is.True(err != nil)
			is.Equal(calls.Load(), int32(0))
			_, err = w.RunJob(t.Context(), ids[0])
			is.NoErr(err)
			_, err = w.RunJob(t.Context(), ids[1])
			is.NoErr(err)
			is.Equal(calls.Load(), int32(2))
		})
	})
}

// TestAKeyedLeaseLeavesAJobMovedLaterWhileItWaitedForItsRow: a debounce
// moves a pending job of a key an hour on, in a transaction that holds
// its row while a lease of the keyed queue waits for it. On PostgreSQL
// the keyed lease chose its jobs in a subquery, whose reading of run_at
// predates the wait, and its update rechecked the state alone: it
// started the job at once, the debounce's delay lost.
func TestAKeyedLeaseLeavesAJobMovedLaterWhileItWaitedForItsRow(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := t.Context()
	q, _ := e.mustOpen(t, newFakeClock())
	is.NoErr(q.SetLimits(ctx, "kq", lite.Limits{MaxRunningPerKey: 2}))
	mustEnqueue(t, q, lite.NewJob{Queue: "kq", Key: "c"})
	mustLeaseOne(t, q, "kq") // one job of key c runs: the lease takes the keyed path
	id := mustEnqueue(t, q, lite.NewJob{Queue: "kq", Key: "c"})

	// A debounce's transaction, its commit held: the job an hour on.
	app, pid := appTx(t, q)
	_, err := app.ExecContext(ctx, `update lite_jobs set run_at = run_at + 3600000 where id = $1`, id)
	is.NoErr(err)
	type result struct {
		jobs []*lite.Job
		err  error
	}
	leased := make(chan result, 1)
	go func() {
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"kq"}})
		leased <- result{jobs, err}
	}()
	waitUntilBlockedBy(t, q, pid) // the lease waits for the row
	is.NoErr(app.Commit())
	got := <-leased
	is.NoErr(got.err)
	is.Equal(len(got.jobs), 0) // not due for an hour
	is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
}
