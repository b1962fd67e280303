package lite

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// leaseKey identifies a run by its lease: the same job leased again is a
// new run.
type leaseKey struct{ id, generation int64 }

// run is one job in a handler, under one lease.
type run struct {
	job     *Job
	lane    *lane // whose slot it holds
	vacated bool  // its slot is free again; guarded by Worker.mu
	ctx     context.Context
	cancel  context.CancelCauseFunc
	// settling is set once before anything is written for the run, by
	// the run itself as it settles or by a shutdown that gives up on it:
	// whichever sets it owns the run's last write, and a heartbeat that
	// finds the lease gone after that knows the worker itself ended it.
	settling atomic.Bool
	lostSeen atomic.Bool // a heartbeat found the lease lost and stopped the handler
	reports  reports     // SetProgress and Log's, until a heartbeat or the ack writes them
	outcome  EventKind
	ended    Event // the event settle emitted, which RunJob returns
}

func (r *run) key() leaseKey { return leaseKey{r.job.ID, r.job.Generation} }

// start runs j's handler on a goroutine of its own, in a slot of l, the
// lane that leased it. A run of the same job under an older lease is
// stopped: the new lease proves the old one lost.
func (w *Worker) start(handlerCtx context.Context, l *lane, j *Job) *run {
	r := &run{job: j, lane: l}
	r.ctx, r.cancel = context.WithCancelCause(handlerCtx)
	w.mu.Lock()
	old := w.newest[j.ID]
	w.active[r.key()] = r
	l.busy++
	w.newest[j.ID] = r
	w.mu.Unlock()
	if old != nil && !old.settling.Load() {
		w.opts.Logger.Warn("lite: lease lost: the job was leased again; stopping its old handler",
			"job_id", j.ID, "kind", j.Kind, "lease_generation", old.job.Generation, "current_generation", j.Generation)
		old.cancel(leaseLost(old.job.Lease()))
	}
	w.goroutines.Add(1)
	go func() {
		defer w.goroutines.Done()
		defer w.finish(r)
		w.execute(r)
	}()
	return r
}

// finish frees the run's slot.
func (w *Worker) finish(r *run) {
	r.cancel(nil)
	w.mu.Lock()
	w.vacate(r)
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

func (w *Worker) timeout(kind string) time.Duration {
	if d, ok := w.opts.KindTimeouts[kind]; ok {
		return d
	}
	return w.opts.Timeout
}

func (w *Worker) emit(ev Event) {
	if w.opts.OnEvent != nil {
		w.opts.OnEvent(ev)
	}
	w.q.obs.emit(ev)
}

// execute runs the handler and settles its outcome.
func (w *Worker) execute(r *run) {
	w.emit(Event{Kind: EventStarted, JobID: r.job.ID, Job: r.job, Generation: r.job.Generation, State: StateRunning})
	ctx := r.ctx
	timeout := w.timeout(r.job.Kind)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	done := &success{}
	ctx = context.WithValue(ctx, outcomeKey{}, done)
	ctx = context.WithValue(ctx, reportsKey{}, &r.reports)
	h := w.handler(r.job.Kind)
	start := w.q.opts.Now()
	var err error
	if h == nil {
		err = Permanent(fmt.Errorf("no handler for kind %q", r.job.Kind))
	} else {
		err = call(ctx, w.wrap(r.job.Kind, h), r.job)
	}
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
		err = fmt.Errorf("%w after %s: %w", errTimeout, timeout, err)
	}
	elapsed := w.q.opts.Now().Sub(start)
	if !r.settling.CompareAndSwap(false, true) {
		// A shutdown gave up on this handler and released its lease; the
		// worker may be gone, so nothing more is written.
		r.outcome = EventLeaseLost
		readCtx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		lost := w.q.lossOf(readCtx, r.job.Lease())
		cancel()
		lost.Why = WhyAbandoned
		w.emit(Event{Kind: EventLeaseLost, JobID: r.job.ID, Job: r.job, Generation: r.job.Generation,
			CurrentGeneration: lost.CurrentGeneration, State: lost.State, Why: lost.Why, Err: lost, Elapsed: elapsed})
		return
	}
	w.writeLastReports(r)
	w.settle(r, err, done.snapshot(), elapsed)
}

// releaseUnstarted gives back leases the worker took but will not run,
// spending no attempt.
func (w *Worker) releaseUnstarted(jobs []*Job) {
	for _, j := range jobs {
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		err := retryBusy(ctx, func() error { return w.q.Release(ctx, j.Lease()) })
		cancel()
		if err != nil {
			w.opts.Logger.Error("lite: releasing a job leased during shutdown failed; it will be reclaimed",
				"job_id", j.ID, "generation", j.Generation, "err", err)
			continue
		}
		w.emit(Event{Kind: EventReleased, JobID: j.ID, Job: j, Generation: j.Generation,
			State: StateAvailable, NextRunAt: w.q.opts.Now()})
	}
}
