package lite

import (
	"context"
	"errors"
	"time"
)

// ackTimeout bounds the write that settles a run, which runs even after
// the handler's context ended so that no job is left stuck.
const ackTimeout = 30 * time.Second

// settle writes the run's outcome under its lease. A lost lease is
// warn-and-skip: nothing is written, and a warning names both generations.
func (w *Worker) settle(r *run, err error, done doneAck, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), ackTimeout)
	defer cancel()
	l := r.job.Lease()
	ev := Event{JobID: r.job.ID, Job: r.job, Generation: l.Generation, Elapsed: elapsed}
	var snooze snoozeError
	var ackErr error
	switch {
	case err == nil:
		ev.Kind, ackErr = EventDone, retryBusy(ctx, func() error { return w.ackDone(ctx, l, done) })
		if refusedForHandlerOutput(ackErr, done) {
			if errors.Is(ackErr, ErrTooLarge) {
				ackErr = Permanent(ackErr) // the same result would be refused again
			}
			failure := ackErr
			ev.Kind, ev.Err = EventFailed, failure
			ackErr = retryBusy(ctx, func() error { return w.q.AckFailed(ctx, l, failure) })
		}
	case errors.Is(context.Cause(r.ctx), ErrShutdown) || errors.Is(err, ErrShutdown):
		ev.Kind, ackErr = EventReleased, retryBusy(ctx, func() error { return w.q.Release(ctx, l) })
	case errors.As(err, &snooze):
		ev.Kind, ackErr = EventSnoozed, retryBusy(ctx, func() error { return w.q.Snooze(ctx, l, snooze.d) })
	default:
		ev.Kind, ev.Err = EventFailed, err
		ackErr = retryBusy(ctx, func() error { return w.q.AckFailed(ctx, l, err) })
	}
	switch {
	case errors.Is(ackErr, ErrLeaseLost):
		ev.Kind, ev.Err = EventLeaseLost, ackErr
		if j, err := w.q.Get(ctx, r.job.ID); err == nil {
			ev.CurrentGeneration = j.Generation
		}
		w.opts.Logger.Warn("lite: stale ack skipped: the lease was lost",
			"job_id", r.job.ID, "kind", r.job.Kind, "lease_generation", l.Generation,
			"current_generation", ev.CurrentGeneration)
	case ackErr != nil:
		// The lease stays ours until its heartbeat lapses; then a reclaim
		// runs the job again.
		w.opts.Logger.Error("lite: writing a job's outcome failed; it will be reclaimed",
			"job_id", r.job.ID, "outcome", ev.Kind, "err", ackErr)
		ev.Kind, ev.Err = EventFailed, ackErr
	case ev.Kind == EventFailed:
		// A job that fails each time must not burn its attempts in silence.
		w.opts.Logger.Warn("lite: job attempt failed",
			"job_id", r.job.ID, "kind", r.job.Kind, "attempt", l.Attempt, "max_attempts", r.job.MaxAttempts,
			"generation", l.Generation, "err", ev.Err)
	}
	r.outcome = ev.Kind
	r.ended = ev
	w.emit(ev)
}

// refusedForHandlerOutput reports whether a done-ack was refused for what
// the handler itself gave it, its CommitWithAck writes failing or a result
// too large to store, rather than for the lease or the lock. The attempt
// then fails instead.
func refusedForHandlerOutput(ackErr error, done doneAck) bool {
	if ackErr == nil || errors.Is(ackErr, ErrLeaseLost) || errors.Is(ackErr, ErrBusy) {
		return false
	}
	return len(done.writes) > 0 || errors.Is(ackErr, ErrTooLarge)
}

func (w *Worker) ackDone(ctx context.Context, l Lease, done doneAck) error {
	if len(done.writes) > 0 {
		return w.q.complete(ctx, l, done.result, done.runWrites)
	}
	if c := w.acks.Load(); c != nil {
		if err := c.ack(l, done.result); !errors.Is(err, errCompleterStopped) {
			return err
		}
	}
	return w.q.AckDone(ctx, l, done.result)
}

// startAcks starts group commit for the worker's run; the returned stop
// writes what is queued and ends it.
func (w *Worker) startAcks() (stop func()) {
	c := w.q.startCompleter()
	w.acks.Store(c)
	return func() {
		w.acks.Store(nil)
		c.stop()
	}
}

// retryBusy runs write until it is not refused as busy, waiting 25ms,
// 50ms, ... up to about three seconds in all: another process's write lock
// (or its recovery after a crash) passes, and a settled outcome is worth
// the wait. Any other error returns at once.
func retryBusy(ctx context.Context, write func() error) error {
	err := write()
	for wait := 25 * time.Millisecond; errors.Is(err, ErrBusy) && wait <= 1600*time.Millisecond; wait *= 2 {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		err = write()
	}
	return err
}
