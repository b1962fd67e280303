package lite_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAJobLeasedAgainByTheSameWorkerIsANewRun(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{})

		causes := make(chan error, 1)
		finish := make(chan struct{})
		var calls atomic.Int32
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 2})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			if calls.Add(1) == 1 {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			}
			<-finish
			return nil
		})
		stop := runWorker(t, w)
		is.Equal(ev.await(t, lite.EventStarted).Generation, int64(1))

		_, err := q.ReleaseUnowned(ctx, id) // generation 2; the same worker leases it again
		is.NoErr(err)
		// why: no heartbeat ran; the new lease itself proves the old one
		// lost, and so does the release's commit, which may come first
		cause := recv(t, causes)
		is.True(errors.Is(cause, lite.ErrLeaseLost))
		var lostLease *lite.LeaseLostError
		is.True(errors.As(cause, &lostLease))
		is.Equal([2]int64{lostLease.JobID, lostLease.Generation}, [2]int64{id, 1})
		// The clock moves only once the new run holds its slot: a lease
		// in flight is not yet one the worker's Reclaim knows it holds.
		is.Equal(ev.await(t, lite.EventStarted).Generation, int64(3))

		for range 10 { // ten hours, over three times StaleAfter: the new run keeps beating
			clock.Advance(time.Hour)
			is.NoErr(w.Heartbeat(ctx))
			is.NoErr(w.Reclaim(ctx))
		}
		close(finish)
		is.Equal(ev.await(t, lite.EventDone).Generation, int64(3))
		stop()
		w.Wait() // the old run has told its outcome too: nothing else runs
		var started, lost []int64
		for _, e := range ev.seen() {
			switch e.Kind {
			case lite.EventStarted:
				started = append(started, e.Generation)
			case lite.EventLeaseLost:
				lost = append(lost, e.Generation)
			}
		}
		is.Equal(started, []int64{1, 3})
		is.Equal(lost, []int64{1})
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(j.Generation, int64(3)) // never reclaimed
		is.Equal(len(j.Errors), 1)       // the release's record alone: no reclaim, no failure
		is.Equal(j.Errors[0].Error, "released by an admin")
	})
}

func TestAShutdownLeavesNothingLeased(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.open(t, fast)
		for round := range scaled(40) {
			is := is.New(t)
			enqueueN(t, q, 200)
			ctx, cancel := context.WithCancel(t.Context())
			w, _, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 4})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			// why: a random moment, so that some rounds stop the worker while a
			// lease statement runs; nothing is timed
			time.AfterFunc(time.Duration(rand.N(3000))*time.Microsecond, cancel)
			is.NoErr(w.Run(ctx))
			stats, err := q.Stats(t.Context())
			is.NoErr(err)
			if n := stats[0].Counts[lite.StateRunning]; n != 0 {
				t.Fatalf("round %d: %d jobs left running after Run returned", round, n)
			}
		}
	})
}

func TestAFreeSlotNeverWaitsForABusyOne(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		for range 3 {
			mustEnqueue(t, q, lite.NewJob{Kind: "long", Priority: 1})
		}
		for range 5 {
			mustEnqueue(t, q, lite.NewJob{Kind: "short"})
		}
		release := make(chan struct{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 4})
		w.Handle("long", func(context.Context, *lite.Job) error {
			<-release
			return nil
		})
		w.Handle("short", func(context.Context, *lite.Job) error { return nil })
		runWorker(t, w)
		for range 5 { // all while the three long jobs hold three slots
			is.Equal(ev.await(t, lite.EventDone).Job.Kind, "short")
		}
		close(release)
		for range 3 {
			is.Equal(ev.await(t, lite.EventDone).Job.Kind, "long")
		}
	})
}

func TestAWorkerWithEverySlotBusySleeps(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		release := make(chan struct{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 2})
		lite.PollOnly(w) // a poll every 5ms: a loop that wakes for the due job shows at once
		var sleeps atomic.Int32
		asleep := make(chan struct{}, 1)
		lite.SetIdleHook(w, func() {
			sleeps.Add(1)
			select {
			case asleep <- struct{}{}:
			default:
			}
		})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			<-release
			return nil
		})
		runWorker(t, w)
		mustEnqueue(t, q, lite.NewJob{})
		ev.await(t, lite.EventStarted)
		recv(t, asleep)
		later := mustEnqueue(t, q, lite.NewJob{Delay: time.Minute})
		recv(t, asleep) // it looked, found the job not yet due, and learnt its run_at
		mustEnqueue(t, q, lite.NewJob{})
		ev.await(t, lite.EventStarted) // every slot busy now

		before := sleeps.Load()
		clock.Advance(2 * time.Minute) // the later job is due, and no slot is free
		// why: a loop that spins on the due job shows within a few polls of
		// 5ms; this only gives it the chance
		time.Sleep(100 * time.Millisecond)
		is.True(sleeps.Load()-before <= 1) // it went to sleep, at most once, and stayed asleep

		close(release)
		for range 3 {
			ev.await(t, lite.EventDone)
		}
		is.Equal(mustGet(t, q, later).State, lite.StateDone)
	})
}

func TestRunDoesNotKeepTheSlotsOfAHandlerThatIgnoresShutdown(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		stuck := mustEnqueue(t, q, lite.NewJob{Kind: "stuck"})
		unblock := make(chan struct{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1, ShutdownGrace: 20 * time.Millisecond})
		w.Handle("stuck", func(context.Context, *lite.Job) error {
			<-unblock // ignores ctx
			return nil
		})
		w.Handle("next", func(context.Context, *lite.Job) error { return nil })
		stop := runWorker(t, w)
		ev.await(t, lite.EventStarted)
		stop()
		is.Equal(mustGet(t, q, stuck).State, lite.StateAvailable) // released by Run

		// A second Run of the same worker has its one slot, though the stuck
		// handler still runs.
		is.NoErr(q.Cancel(t.Context(), stuck))
		next := mustEnqueue(t, q, lite.NewJob{Kind: "next"})
		stop = runWorker(t, w)
		is.Equal(ev.await(t, lite.EventDone).JobID, next)
		stop()

		close(unblock)
		w.Wait()
		lost := ev.await(t, lite.EventLeaseLost)
		is.Equal(lost.JobID, stuck)
		is.Equal(mustGet(t, q, stuck).State, lite.StateCancelled) // its late outcome wrote nothing
	})
}

func TestAWorkerNeverReclaimsALeaseItHolds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{})
		release := make(chan struct{})
		// One slot, busy with the job until the end: a cannot lease it again
		// before the test reads who took it.
		a, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1})
		a.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			<-release
			return nil
		})
		runWorker(t, a)
		var once sync.Once
		finish := func() { once.Do(func() { close(release) }) }
		t.Cleanup(finish) // before the worker stops, also when an assertion fails
		ev.await(t, lite.EventStarted)

		clock.Advance(3*time.Hour + time.Millisecond) // its renewal is late: past its own stale-after
		is.NoErr(a.Reclaim(ctx))
		is.Equal(mustGet(t, q, id).Generation, int64(1)) // its own worker knows it is alive

		b, _, _ := testWorker(t, q, lite.WorkerOptions{})
		is.NoErr(b.Reclaim(ctx))
		is.Equal(mustGet(t, q, id).Generation, int64(2)) // any other reclaimer takes it
		finish()
		ev.await(t, lite.EventLeaseLost)
	})
}
