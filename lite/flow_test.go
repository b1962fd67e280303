package lite_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// leaseN leases up to max jobs from queue (empty: every queue) and
// returns how many it got.
func leaseN(t *testing.T, q *lite.Queue, queue string, max int) []*lite.Job {
	t.Helper()
	req := lite.LeaseRequest{Max: max}
	if queue != "" {
		req.Queues = []string{queue}
	}
	jobs, err := q.Lease(t.Context(), req)
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	return jobs
}

// statsOf is queue's line of Stats.
func statsOf(t *testing.T, q *lite.Queue, queue string) lite.QueueStats {
	t.Helper()
	stats, err := q.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stats {
		if s.Queue == queue {
			return s
		}
	}
	t.Fatalf("stats: no queue %q in %v", queue, stats)
	panic("unreachable")
}

func TestPauseHoldsEveryLeasePath(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		ids := enqueueIn(t, q, "q", 3)
		other := mustEnqueue(t, q, lite.NewJob{Queue: "other"})
		running := mustLeaseOne(t, q, "q")

		is.NoErr(q.Pause(ctx, "q"))
		is.Equal(len(leaseN(t, q, "q", 10)), 0)
		is.Equal(len(leaseN(t, q, "", 10)), 1) // why: only the other queue's job
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q", "other"}, Max: 10})
		is.NoErr(err)
		is.Equal(len(jobs), 0) // other's one job is running already
		_, err = w.RunJob(ctx, ids[1])
		is.True(err != nil && strings.Contains(err.Error(), `its queue "q" is paused`))
		is.Equal(mustGet(t, q, ids[1]).State, lite.StateAvailable) // the refusal changed nothing
		is.NoErr(q.AckDone(ctx, running.Lease(), nil))             // a running job finishes as usual
		is.True(statsOf(t, q, "q").Paused)
		is.Equal(mustGet(t, q, other).State, lite.StateRunning)

		is.NoErr(q.Resume(ctx, "q"))
		is.Equal(len(leaseN(t, q, "q", 1)), 1)
		ev, err := w.RunJob(ctx, ids[2])
		is.NoErr(err)
		is.Equal(ev.Kind, lite.EventDone)
		is.True(!statsOf(t, q, "q").Paused)
	})
}

func TestAQueueWithSettingsAndNoJobsIsInStats(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{Queue: "b"})
		is.NoErr(q.Pause(ctx, "c"))
		is.NoErr(q.SetLimits(ctx, "a", lite.Limits{MaxRunning: 2, Rate: 5, Per: time.Minute}))
		stats, err := q.Stats(ctx)
		is.NoErr(err)
		is.Equal(len(stats), 3)
		is.Equal(stats[0], lite.QueueStats{Queue: "a", Counts: map[lite.State]int64{},
			Limits: lite.Limits{MaxRunning: 2, Rate: 5, Per: time.Minute}})
		is.Equal(stats[1].Queue, "b")
		is.Equal(stats[2], lite.QueueStats{Queue: "c", Counts: map[lite.State]int64{}, Paused: true})

		// Settings back at their defaults leave no line behind.
		is.NoErr(q.Resume(ctx, "c"))
		is.NoErr(q.SetLimits(ctx, "a", lite.Limits{}))
		stats, err = q.Stats(ctx)
		is.NoErr(err)
		is.Equal(len(stats), 1)
	})
}

func TestBadLimitsAreRefusedAndChangeNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		before := lite.Limits{MaxRunning: 4, Rate: 10, Per: time.Second}
		if err := q.SetLimits(ctx, "q", before); err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]struct {
			queue string
			l     lite.Limits
			want  string
		}{
			"a negative MaxRunning":     {"q", lite.Limits{MaxRunning: -1}, "negative MaxRunning -1"},
			"a negative Rate":           {"q", lite.Limits{Rate: -1, Per: time.Second}, "negative Rate -1"},
			"a negative Per":            {"q", lite.Limits{Rate: 1, Per: -time.Second}, "negative Per -1s"},
			"a Rate without a Per":      {"q", lite.Limits{Rate: 5}, "Rate of 5 has no Per"},
			"a Per without a Rate":      {"q", lite.Limits{Per: time.Second}, "Per of 1s has no Rate"},
			"a Per under a millisecond": {"q", lite.Limits{Rate: 1, Per: time.Microsecond}, "under a millisecond"},
			"an empty queue name":       {"", lite.Limits{MaxRunning: 1}, "queue name is empty"},
			"a control character":       {"a\nb", lite.Limits{MaxRunning: 1}, "control character"},
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				err := q.SetLimits(ctx, c.queue, c.l)
				is.True(err != nil && strings.Contains(err.Error(), c.want))
				is.True(errors.Is(err, lite.ErrInvalid)) // the caller's mistake, not the database's
				is.Equal(statsOf(t, q, "q").Limits, before)
			})
		}
		t.Run("pausing a queue with a bad name", func(t *testing.T) {
			is := is.New(t)
			is.True(q.Pause(ctx, "") != nil)
			is.True(q.Pause(ctx, "a\x9bb") != nil)
			stats, err := q.Stats(ctx)
			is.NoErr(err)
			is.Equal(len(stats), 1) // why: only q, with its limits
		})
	})
}

func TestMaxRunningHoldsAcrossConnections(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		clock := newFakeClock()
		opts := lite.Options{Now: clock.Now}
		q, dsn := e.open(t, opts)
		// Each its own pool, as another process would have.
		others := []*lite.Queue{q, mustOpenOpts(t, dsn, opts), mustOpenOpts(t, dsn, opts), mustOpenOpts(t, dsn, opts)}
		if err := q.SetLimits(t.Context(), "q", lite.Limits{MaxRunning: 3}); err != nil {
			t.Fatal(err)
		}

		t.Run("leases on separate connections share the slots", func(t *testing.T) {
			is := is.New(t)
			enqueueIn(t, q, "q", 10)
			a := leaseN(t, others[0], "q", 2)
			is.Equal(len(a), 2)
			is.Equal(len(leaseN(t, others[1], "q", 5)), 1) // why: one slot was left
			is.Equal(len(leaseN(t, others[2], "", 5)), 0)  // the shared lease is held too
			is.NoErr(q.AckDone(t.Context(), a[0].Lease(), nil))
			is.Equal(len(leaseN(t, others[3], "q", 5)), 1)
			is.Equal(len(leaseN(t, others[3], "q", 5)), 0)
		})

		t.Run("leases at once never run more than the limit", func(t *testing.T) {
			is := is.New(t)
			q, dsn := e.open(t, opts)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunning: 3}))
			const jobs = 200
			enqueueIn(t, q, "q", jobs)
			// held counts leases from after their lease commits to before
			// their ack does, so it never exceeds what the file holds.
			var held, most, done atomic.Int64
			var wg sync.WaitGroup
			for range 4 {
				c := mustOpenOpts(t, dsn, opts)
				wg.Go(func() {
					for done.Load() < jobs {
						got, err := c.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 3})
						if err != nil {
							t.Error(err)
							return
						}
						now := held.Add(int64(len(got)))
						for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
						}
						for _, j := range got {
							held.Add(-1)
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
			is.True(most.Load() <= 3) // the limit held across every connection
			is.True(most.Load() >= 1)
		})
	})
}

func TestASlotComesBackOnlyWhenItsJobIsReclaimed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		opts := lite.Options{Now: clock.Now}
		q, dsn := e.open(t, opts)
		killed := mustOpenOpts(t, dsn, opts)
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{MaxRunning: 1}))
		enqueueIn(t, q, "q", 3)
		jobs, err := killed.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, StaleAfter: time.Minute})
		is.NoErr(err)
		is.Equal(len(jobs), 1)
		lost := jobs[0]

		clock.Advance(59 * time.Second)
		reclaimed, err := q.ReclaimOrphaned(ctx)
		is.NoErr(err)
		is.Equal(len(reclaimed), 0)
		is.Equal(len(leaseN(t, q, "q", 3)), 0) // why: the silent owner's promise still holds its slot

		clock.Advance(2 * time.Second)
		reclaimed, err = q.ReclaimOrphaned(ctx)
		is.NoErr(err)
		is.Equal(len(reclaimed), 1)
		next := leaseN(t, q, "q", 3)
		is.Equal(len(next), 1) // the slot came back once
		is.Equal(len(leaseN(t, q, "q", 3)), 0)
		is.True(errors.Is(killed.AckDone(ctx, lost.Lease(), nil), lite.ErrLeaseLost))
		is.Equal(len(leaseN(t, q, "q", 3)), 0) // a lost lease's ack frees no second slot
		is.NoErr(q.AckDone(ctx, next[0].Lease(), nil))
		is.Equal(len(leaseN(t, q, "q", 3)), 1)
	})
}

func TestARateLimitStartsExactlyItsRatePerWindow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{Rate: 5, Per: time.Second}))
		enqueueIn(t, q, "q", 40)
		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })

		started := 0
		for range 3 {
			a := leaseN(t, q, "q", 3)
			is.Equal(len(a), 3)
			is.Equal(len(leaseN(t, other, "q", 10)), 2) // why: the window's other starts, in another pool
			is.Equal(len(leaseN(t, q, "", 10)), 0)
			clock.Advance(999 * time.Millisecond)
			is.Equal(len(leaseN(t, other, "q", 10)), 0) // the window has not ended
			at, _, err := lite.NextRunAt(ctx, q, []string{"q"})
			is.NoErr(err)
			is.True(at.Equal(clock.Now().Add(time.Millisecond))) // a worker sleeps until the window ends
			started += 5
			clock.Advance(time.Millisecond)
		}
		is.Equal(started, 15)

		// A job given back and leased again starts twice.
		j := leaseN(t, q, "q", 1)[0]
		is.NoErr(q.Release(ctx, j.Lease()))
		is.Equal(leaseN(t, q, "q", 1)[0].ID, j.ID)
		is.Equal(len(leaseN(t, q, "q", 10)), 3)
		list, err := q.List(ctx, lite.ListFilter{State: lite.StateAvailable, Queue: "q", Limit: 1})
		is.NoErr(err)
		id := list[0].ID
		_, err = w.RunJob(ctx, id)
		is.True(err != nil && strings.Contains(err.Error(), `its queue "q" is at its limit`)) // run-now starts count too
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})
}

func TestNextRunAtLeavesOutQueuesThatCannotStart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		mustEnqueue(t, q, lite.NewJob{Queue: "paused"})
		mustEnqueue(t, q, lite.NewJob{Queue: "full"})
		mustEnqueue(t, q, lite.NewJob{Queue: "full"})
		later := clock.Now().Add(time.Hour)
		mustEnqueue(t, q, lite.NewJob{Queue: "later", RunAt: later})
		is.NoErr(q.Pause(ctx, "paused"))
		is.NoErr(q.SetLimits(ctx, "full", lite.Limits{MaxRunning: 1}))
		mustLeaseOne(t, q, "full")

		at, held, err := lite.NextRunAt(ctx, q, nil)
		is.NoErr(err)
		is.True(at.Equal(later)) // why: the due jobs of a paused and of a full queue cannot start
		is.True(held)            // a slot the full queue frees is worth waking for

		at, held, err = lite.NextRunAt(ctx, q, []string{"paused"})
		is.NoErr(err)
		is.True(at.IsZero()) // nothing to wake for until it is resumed
		is.True(!held)
	})
}

func TestAWorkerOfEveryQueueHonoursEachQueuesLimits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		is.NoErr(q.SetLimits(ctx, "limited", lite.Limits{MaxRunning: 2}))
		is.NoErr(q.Pause(ctx, "paused"))
		// The held queues' jobs come first in lease order, so that a lease
		// that ignored their limits would take them.
		limited := make([]int64, 5)
		for i := range limited {
			limited[i] = mustEnqueue(t, q, lite.NewJob{Queue: "limited", Priority: 2})
		}
		for range 3 {
			mustEnqueue(t, q, lite.NewJob{Queue: "paused", Priority: 1})
		}
		enqueueIn(t, q, "free", 3)
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{
			Concurrency: 8,
			// No poll and no WAL watch: only a freed slot can wake the
			// loop once the limited queue is full.
			PollInterval: time.Hour,
		})
		lite.PollOnly(w)
		idle := idleSignals(w)
		g := runGated(t, w)

		recv(t, idle)
		is.Equal(running(t, q), map[string]int64{"limited": 2, "paused": 0, "free": 3})
		g.open(limited[0])
		awaitStarted(t, ev, limited[2]) // the freed slot of the limited queue is taken at once
		is.Equal(running(t, q), map[string]int64{"limited": 2, "paused": 0, "free": 3})
	})
}

func TestARateWindowLeftInTheFutureByAClockSteppedBackIsOver(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{Rate: 5, Per: time.Second}))
		enqueueIn(t, q, "q", 20)
		clock.Advance(2 * time.Hour)
		is.Equal(len(leaseN(t, q, "q", 10)), 5)

		clock.Advance(-2 * time.Hour)           // the clock is set right
		is.Equal(len(leaseN(t, q, "q", 10)), 5) // why: a window that opens in two hours is not the current one
		is.Equal(len(leaseN(t, q, "q", 10)), 0) // the starts open a window now and count in it
		clock.Advance(time.Second)
		is.Equal(len(leaseN(t, q, "q", 10)), 5)
	})
}

// Two processes whose clocks are a moment apart share a rate window: the
// starts of one up to a second behind the one that opened the window
// count in it, rather than open a window of their own, so the two
// together start no more than the rate.
func TestARateWindowHoldsForAClockAMomentBehind(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{Rate: 5, Per: time.Minute}))
		enqueueIn(t, q, "q", 20)
		clock.Advance(time.Second)
		is.Equal(len(leaseN(t, q, "q", 3)), 3)

		clock.Advance(-700 * time.Millisecond)  // another process, 700 ms behind
		is.Equal(len(leaseN(t, q, "q", 10)), 2) // why: its starts count in the window the first one opened
		clock.Advance(700 * time.Millisecond)   // the first process again
		is.Equal(len(leaseN(t, q, "q", 10)), 0) // the window has had its 5
	})
}

func TestChangingTheRateRestartsItsWindows(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{Rate: 100, Per: time.Second}))
		enqueueIn(t, q, "q", 60)
		is.Equal(len(leaseN(t, q, "q", 50)), 50)
		is.NoErr(q.SetLimits(ctx, "q", lite.Limits{Rate: 5, Per: time.Hour}))
		clock.Advance(1100 * time.Millisecond)
		is.Equal(len(leaseN(t, q, "q", 10)), 5) // why: the old window's 50 starts do not count against the new rate
	})
}
