package lite

import (
	"context"
	"math"
	"sync"
	"time"
)

// scheduleRecheck is the least time between two looks at the schedules
// that other processes' commits prompt. Under load commits come by the
// thousand a second, and nearly none of them touch a schedule; a change
// that does is seen this much later at worst.
const scheduleRecheck = 100 * time.Millisecond

// fireRetry is how soon a worker tries again after a fire failed: a busy
// file has freed by then, and a schedule this host cannot compute (its
// zone missing from the time zone database) is not retried in a tight
// loop.
const fireRetry = time.Second

// startFiring runs the worker's firing loop on a goroutine of its own,
// beside the leasing loop, so that a schedule fires on time even while
// every slot is busy, until ctx ends or stop is called. Other processes'
// commits (commits; nil when none are reported) go to both loops: the
// leasing loop reads them from the returned channel.
func (w *Worker) startFiring(ctx context.Context, commits <-chan struct{}, poll time.Duration) (
	leaseCommits <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	var fireCommits chan struct{}
	if commits != nil {
		toLease, toFire := make(chan struct{}, 1), make(chan struct{}, 1)
		leaseCommits, fireCommits = toLease, toFire
		done.Go(func() { fanOut(ctx, commits, toLease, toFire) })
	}
	done.Go(func() { w.fireLoop(ctx, fireCommits, poll) })
	return leaseCommits, func() {
		cancel()
		done.Wait()
	}
}

// fanOut signals each of outs at every signal on in, until ctx ends.
func fanOut(ctx context.Context, in <-chan struct{}, outs ...chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-in:
			for _, out := range outs {
				signal(out)
			}
		}
	}
}

// signal sends on a channel with a buffer of one without waiting: a
// signal already pending says the same.
func signal(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// fireLoop fires every due schedule, then sleeps until the earliest next
// tick of an unpaused schedule, a schedule change in this process, or a
// commit by another, which may have changed one; a poll is the safety
// net for a commit not reported. With no schedule due it writes nothing.
func (w *Worker) fireLoop(ctx context.Context, commits <-chan struct{}, poll time.Duration) {
	// A look costs a query, not a read of a counter as the leasing loop's
	// poll does: poll no more often than a reported commit is followed up.
	poll = max(poll, scheduleRecheck)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		changed := w.q.sched.wait()
		_, next, err := w.q.fireSchedules(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := poll
		switch {
		case err != nil:
			w.opts.Logger.Warn("lite: firing schedules failed; retrying", "err", err, "in", fireRetry)
			wait = fireRetry
		default:
			wait = min(wait, w.untilTick(next))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-timer.C:
		case <-commits:
			// Look again after scheduleRecheck, or at the next tick if
			// that comes sooner.
			timer.Reset(min(w.untilTick(next), scheduleRecheck))
			select {
			case <-ctx.Done():
				return
			case <-changed:
			case <-timer.C:
			}
		}
	}
}

// untilTick is how long until next, the earliest tick a schedule waits
// for; for no tick (zero), forever.
func (w *Worker) untilTick(next time.Time) time.Duration {
	if next.IsZero() {
		return time.Duration(math.MaxInt64)
	}
	return max(next.Sub(w.q.opts.Now()), 0)
}
