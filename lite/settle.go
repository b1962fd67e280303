package lite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ackTimeout bounds the write that settles a run, which runs even after
// the handler's context ended so that no job is left stuck.
const ackTimeout = 30 * time.Second

// settle writes the run's outcome under its lease. A lost lease is
// warn-and-skip: nothing is written, and a warning names both generations
// and why the lease was lost.
func (w *Worker) settle(r *run, err error, out settlement, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), ackTimeout)
	defer cancel()
	l := r.job.Lease()
	ev := Event{JobID: r.job.ID, Job: r.job, Generation: l.Generation, Elapsed: elapsed}
	var snooze *SnoozeError
	var writeErr error
	waited := false // the write's own commit waited for Options.AfterCommit
	switch {
	case err == nil:
		ev.Kind, ev.State = EventDone, StateDone
		writeErr = retryBusy(ctx, func() (err error) {
			waited, err = w.ackDone(ctx, l, out)
			return err
		})
		if refusedForHandlerOutput(writeErr, out) {
			waited = false // the failure is a write of its own
			cause := writeErr
			if errors.Is(cause, ErrTooLarge) {
				cause = Permanent(cause) // the same result would be refused again
			}
			writeErr = w.fail(ctx, l, cause, out, &ev)
		}
	case errors.Is(context.Cause(r.ctx), ErrShutdown) || errors.Is(err, ErrShutdown):
		ev.Kind, ev.State, ev.NextRunAt = EventReleased, StateAvailable, w.q.opts.Now()
		writeErr = retryBusy(ctx, func() error { return w.q.Release(ctx, l) })
	case errors.As(err, &snooze):
		ev.Kind, ev.State = EventSnoozed, StateAvailable
		writeErr = retryBusy(ctx, func() (err error) {
			ev.NextRunAt, err = w.q.snooze(ctx, l, snooze.Delay)
			return err
		})
	default:
		writeErr = w.fail(ctx, l, err, out, &ev)
	}
	if writeErr == nil && !waited {
		writeErr = w.q.afterCommit(ctx)
	}
	switch {
	case errors.Is(writeErr, ErrAfterCommit):
		// Written here: the event stands, and a replica may lack it.
		w.opts.Logger.Error("lite: a job's outcome committed, but the wait after its commit failed",
			"job_id", r.job.ID, "outcome", ev.Kind, "err", writeErr)
	case errors.Is(writeErr, ErrLeaseLost):
		var lost *LeaseLostError
		if !errors.As(writeErr, &lost) || lost.Why == "" {
			lost = w.q.lossOf(ctx, l) // the group commit's acks do not say why
		}
		ev = Event{Kind: EventLeaseLost, JobID: r.job.ID, Job: r.job, Generation: l.Generation,
			CurrentGeneration: lost.CurrentGeneration, State: lost.State, Why: lost.Why, Err: lost, Elapsed: elapsed}
		w.opts.Logger.Warn("lite: stale ack skipped: the lease was lost",
			"job_id", r.job.ID, "kind", r.job.Kind, "lease_generation", l.Generation,
			"current_generation", ev.CurrentGeneration, "why", ev.Why, "state", ev.State)
	case writeErr != nil:
		// The lease stays ours until its heartbeat lapses; then a reclaim
		// runs the job again.
		w.opts.Logger.Error("lite: writing a job's outcome failed; it will be reclaimed",
			"job_id", r.job.ID, "outcome", ev.Kind, "err", writeErr)
		ev.Kind, ev.State, ev.NextRunAt, ev.Why, ev.Err = EventFailed, StateRunning, time.Time{}, WhyUnrecorded, writeErr
	case ev.Why == WhyFailureWritesFailed:
		w.opts.Logger.Error("lite: job attempt failed, and its failure writes failed: recorded without them",
			"job_id", r.job.ID, "kind", r.job.Kind, "attempt", l.Attempt, "max_attempts", r.job.MaxAttempts,
			"generation", l.Generation, "state", ev.State, "err", ev.Err)
	case ev.Kind == EventFailed:
		// A job that fails each time must not burn its attempts in silence.
		w.opts.Logger.Warn("lite: job attempt failed",
			"job_id", r.job.ID, "kind", r.job.Kind, "attempt", l.Attempt, "max_attempts", r.job.MaxAttempts,
			"generation", l.Generation, "why", ev.Why, "err", ev.Err)
	}
	r.outcome = ev.Kind
	r.ended = ev
	w.emit(ev)
}

// fail records the run's failure with the handler's CommitWithFailure
// writes, and fills ev in with it.
func (w *Worker) fail(ctx context.Context, l Lease, cause error, out settlement, ev *Event) error {
	ev.Kind, ev.Err = EventFailed, cause
	return retryBusy(ctx, func() error {
		f, err := w.q.fail(ctx, l, cause, out.failureWrites())
		if err == nil {
			ev.State, ev.NextRunAt, ev.Why, ev.Err = f.State, f.NextRunAt, f.Why, f.Err
		}
		return err
	})
}

// refusedForHandlerOutput reports whether a done-ack was refused for what
// the handler itself gave it, its CommitWithAck writes failing or a result
// too large to store, rather than for the lease or the lock. The attempt
// then fails instead.
func refusedForHandlerOutput(ackErr error, out settlement) bool {
	if isWritesError(ackErr) {
		return true
	}
	if ackErr == nil || errors.Is(ackErr, ErrLeaseLost) || errors.Is(ackErr, ErrBusy) {
		return false
	}
	return len(out.writes) > 0 || errors.Is(ackErr, ErrTooLarge)
}

// ackDone writes a done-ack; waited says the group commit that wrote it
// also waited for Options.AfterCommit.
func (w *Worker) ackDone(ctx context.Context, l Lease, out settlement) (waited bool, err error) {
	if len(out.writes) > 0 {
		return false, w.q.complete(ctx, l, out.result, out.ackWrites(ctx, w.q, l))
	}
	if c := w.acks.Load(); c != nil {
		if err := c.ack(l, out.result); !errors.Is(err, errCompleterStopped) {
			return true, err
		}
	}
	return false, w.q.AckDone(ctx, l, out.result)
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

// retryBusy runs write until it is neither refused as busy nor cut off
// from its server. Busy waits 25ms, 50ms, ... up to about three seconds
// in all: another process's write lock (or its recovery after a crash)
// passes, and a settled outcome is worth the wait. An unreachable server
// (restarting, a connection killed) is tried again every 1.6 s at most
// until ctx ends (the ack's 30 s), so that an outcome is not lost to an
// outage shorter than that and the job run a second time. Any other
// error returns at once.
func retryBusy(ctx context.Context, write func() error) error {
	err := write()
	var waited time.Duration
	for wait := 25 * time.Millisecond; ; wait = min(2*wait, 1600*time.Millisecond) {
		if errors.Is(err, ErrAfterCommit) {
			return err // committed: written again, it would find its lease gone
		}
		busy := errors.Is(err, ErrBusy) && waited < 3*time.Second
		if !busy && !unreachable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		waited += wait
		err = write()
	}
}

// maxGroup caps how many acks one group commit holds.
const maxGroup = 512

// ackRequest is one done-ack waiting for a group commit.
type ackRequest struct {
	done  Done
	reply chan error
}

// completer group-commits done-acks: it writes every ack already waiting
// in one transaction, so that under load a commit (and, with SyncFull, an
// fsync) serves many jobs, and an idle worker's ack waits for nothing.
type completer struct {
	q    *Queue
	reqs chan ackRequest
	done chan struct{}

	mu     sync.RWMutex // held shared by acks in flight, exclusively by stop
	closed bool
}

// errCompleterStopped sends an ack the direct way: its worker stopped, as
// it does before a handler that ignored shutdown returns.
var errCompleterStopped = errors.New("completer stopped")

func (q *Queue) startCompleter() *completer {
	c := &completer{q: q, reqs: make(chan ackRequest, maxGroup), done: make(chan struct{})}
	go c.run()
	return c
}

// ack queues a done-ack and waits until its transaction committed.
func (c *completer) ack(l Lease, result []byte) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errCompleterStopped
	}
	reply := make(chan error, 1)
	c.reqs <- ackRequest{done: Done{Lease: l, Result: result}, reply: reply}
	return <-reply
}

// stop ends the completer once every queued ack is written; later acks
// get errCompleterStopped.
func (c *completer) stop() {
	c.mu.Lock()
	c.closed = true
	close(c.reqs)
	c.mu.Unlock()
	<-c.done
}

func (c *completer) run() {
	defer close(c.done)
	for first := range c.reqs {
		group := []ackRequest{first}
	gather:
		for len(group) < maxGroup {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		c.commit(group)
	}
}

func (c *completer) commit(group []ackRequest) {
	acks := make([]Done, len(group))
	for i, r := range group {
		acks[i] = r.done
	}
	// Acks run after their handlers ended, whatever the worker's context.
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	results, err := c.q.AckDoneMany(ctx, acks)
	var waited error
	if err == nil {
		waited = c.q.afterCommit(ctx) // once per group commit, not per ack
	}
	for i, r := range group {
		switch {
		case err != nil:
			r.reply <- err
		case results[i] != nil:
			r.reply <- fmt.Errorf("ack done: %w", results[i])
		default:
			r.reply <- waited
		}
	}
}
