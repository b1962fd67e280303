package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

func TestARequestToStopCountsOnceHoweverItIsDelivered(t *testing.T) {
	t.Parallel()
	// deliver starts a watcher and hands it each signal in turn, moving
	// the clock by the gap before it; it returns the watcher's stop-at-once
	// context and its signal channel.
	deliver := func(t *testing.T, steps ...any) (context.Context, chan<- os.Signal) {
		t.Helper()
		clock := litetest.NewClock(time.Date(2026, 12, 1, 21, 37, 0, 0, time.UTC))
		signals := make(chan os.Signal)
		graceful, now, stop := watchSignals(t.Context(), signals, clock.Now)
		t.Cleanup(stop)
		for _, s := range steps {
			switch s := s.(type) {
			case time.Duration:
				clock.Advance(s)
			case os.Signal:
				signals <- s
			}
		}
		<-graceful.Done() // the first signal stops it gracefully, whatever follows
		return now, signals
	}

	t.Run("a SIGTERM to the pid and then to the group is one request", func(t *testing.T) {
		is := is.New(t)
		now, signals := deliver(t, syscall.SIGTERM, time.Millisecond, syscall.SIGTERM, 500*time.Millisecond, syscall.SIGTERM)
		// The send on the unbuffered channel returned once the watcher took
		// the last signal; two more copies of the first, at no later time,
		// return once it decided on that one, and change nothing.
		signals <- syscall.SIGTERM
		signals <- syscall.SIGTERM
		is.NoErr(now.Err()) // not stopped at once
	})
	t.Run("the same signal again a second later stops at once", func(t *testing.T) {
		now, _ := deliver(t, syscall.SIGTERM, time.Second, syscall.SIGTERM)
		stoppedAtOnce(t, now)
	})
	t.Run("another signal stops at once however soon it comes", func(t *testing.T) {
		now, _ := deliver(t, syscall.SIGTERM, time.Millisecond, os.Interrupt)
		stoppedAtOnce(t, now)
	})
}

func stoppedAtOnce(t *testing.T, now context.Context) {
	t.Helper()
	select {
	case <-now.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("not stopped at once")
	}
}
