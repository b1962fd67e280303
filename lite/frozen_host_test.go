package lite_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// freezeFirst freezes the first host to reach a hook until the test
// ends or thaw is called; the others pass. frozen is closed once it is.
func freezeFirst(t *testing.T) (hook func(), frozen <-chan struct{}, thaw func()) {
	var first atomic.Bool
	in, out := make(chan struct{}), make(chan struct{})
	var thawed atomic.Bool
	thaw = func() {
		if thawed.CompareAndSwap(false, true) {
			close(out)
		}
	}
	t.Cleanup(thaw)
	return func() {
		if first.CompareAndSwap(false, true) {
			close(in)
			<-out
		}
	}, in, thaw
}

// TestAHostFrozenInsideATransactionStopsNoOtherHost freezes one host on
// PostgreSQL inside a lease of a limited queue, once it holds the queue's
// row, and inside a schedule's fire, once it holds the schedule's row: the
// other host leases and fires within the frozen lease's stale-after (the
// server ends the frozen transaction), and what the frozen host wrote
// there never commits. Without a bound, the other host waited for as long
// as the frozen one stayed frozen.
func TestAHostFrozenInsideATransactionStopsNoOtherHost(t *testing.T) {
	e := onPostgres(t)
	const staleAfter = time.Second
	// wait runs call in the background and returns its error, or fails
	// the test if it takes longer than a few stale-afters.
	wait := func(t *testing.T, thaw func(), call func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * staleAfter):
			thaw()
			<-done
			t.Fatal("the other host waited for the frozen one")
			return nil
		}
	}

	// hosts opens two queues on one schema, with one fake clock. The other
	// host's statements may wait twice as long as the frozen host's
	// transaction may sit idle (ServerTxTimeout, 2 s by default): the
	// server ends the frozen one first, however loaded the machine.
	hosts := func(t *testing.T) (clock *fakeClock, frozenHost, other *lite.Queue) {
		clock = newFakeClock()
		frozenHost, dsn := e.mustOpen(t, clock)
		return clock, frozenHost, mustOpenOpts(t, dsn, lite.Options{Now: clock.Now, ServerTxTimeout: 4 * time.Second})
	}

	t.Run("a frozen lease of a limited queue holds up no other host's lease", func(t *testing.T) {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		_, frozenHost, other := hosts(t)
		is.NoErr(frozenHost.SetLimits(ctx, "a", lite.Limits{MaxRunning: 1}))
		mustEnqueue(t, frozenHost, lite.NewJob{Queue: "a"})
		mustEnqueue(t, frozenHost, lite.NewJob{Queue: "a"})
		hook, frozen, thaw := freezeFirst(t)
		lite.FreezeAfterFlowLock(t, hook)
		req := lite.LeaseRequest{Queues: []string{"a"}, StaleAfter: staleAfter}

		frozenLease := make(chan error, 1)
		go func() {
			_, err := frozenHost.Lease(ctx, req)
			frozenLease <- err
		}()
		<-frozen
		err := wait(t, thaw, func() error {
			jobs, err := other.Lease(ctx, req)
			if err == nil && len(jobs) != 1 {
				t.Errorf("the other host leased %d jobs, want 1", len(jobs))
			}
			return err
		})
		is.NoErr(err)
		thaw()
		is.True(<-frozenLease != nil)                                        // why: the server ended the frozen transaction
		is.Equal(statsOf(t, other, "a").Counts[lite.StateRunning], int64(1)) // why: the frozen lease committed nothing
	})

	t.Run("a frozen pause holds up no other host's lease", func(t *testing.T) {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		_, frozenHost, other := hosts(t)
		mustEnqueue(t, frozenHost, lite.NewJob{Queue: "b"})
		hook, frozen, thaw := freezeFirst(t)
		lite.FreezeAfterFlowLock(t, hook)

		frozenPause := make(chan error, 1)
		go func() { frozenPause <- frozenHost.Pause(ctx, "other") }()
		<-frozen
		err := wait(t, thaw, func() error {
			jobs, err := other.Lease(ctx, lite.LeaseRequest{Queues: []string{"b"}, StaleAfter: staleAfter})
			if err == nil && len(jobs) != 1 {
				t.Errorf("the other host leased %d jobs, want 1", len(jobs))
			}
			return err
		})
		is.NoErr(err)
		thaw()
		is.True(<-frozenPause != nil)       // why: the server ended the frozen transaction
		is.NoErr(other.Pause(ctx, "other")) // and the next pause goes through
	})

	t.Run("a frozen fire holds up no other host's fires", func(t *testing.T) {
		is := is.New(t)
		ctx := context.WithoutCancel(t.Context())
		clock, frozenHost, other := hosts(t)
		is.NoErr(frozenHost.SetSchedule(ctx, lite.Schedule{Name: "tick", Spec: "@every 1s", Job: lite.NewJob{Queue: "s"}}))
		clock.Advance(time.Second)
		hook, frozen, thaw := freezeFirst(t)
		lite.FreezeAfterFireLock(t, hook)

		frozenFire := make(chan error, 1)
		go func() {
			_, err := frozenHost.FireSchedules(ctx)
			frozenFire <- err
		}()
		<-frozen
		var fired int
		err := wait(t, thaw, func() (err error) {
			fired, err = other.FireSchedules(ctx)
			return err
		})
		is.NoErr(err)
		is.Equal(fired, 1)
		thaw()
		is.True(<-frozenFire != nil)                                           // why: the server ended the frozen transaction
		is.Equal(statsOf(t, other, "s").Counts[lite.StateAvailable], int64(1)) // why: the tick was enqueued once
	})
}
