package lite

import (
	"context"
	"errors"
	"time"
)

// Heartbeat renews every lease the worker holds, in one statement, and
// cancels the handler of each lease found lost, with a *LeaseLostError
// (ErrLeaseLost) as the cause. Run calls it every HeartbeatInterval; call it yourself only to
// drive a worker by hand, as tests do.
func (w *Worker) Heartbeat(ctx context.Context) error {
	runs := w.activeRuns()
	if len(runs) == 0 {
		return nil
	}
	results, err := w.q.Renew(ctx, leasesOf(runs))
	if err != nil {
		return err
	}
	defer w.reportsLogged(ctx, runs, results)
	for i, lost := range results {
		if lost != nil {
			w.stopLost(runs[i], lost)
		}
	}
	return nil
}

// stopLost cancels r's handler with lost, a *LeaseLostError, as the cause,
// unless r is ending by itself or was told already (by a heartbeat, or a
// look after a commit: see watchLeases).
func (w *Worker) stopLost(r *run, lost error) {
	if r.settling.Load() || !r.lostSeen.CompareAndSwap(false, true) {
		return
	}
	w.opts.Logger.Warn("lite: lease lost; stopping its handler",
		"job_id", r.job.ID, "kind", r.job.Kind, "lease_generation", r.job.Generation)
	r.reports.refuse(lost) // before the handler wakes: what it reports then is refused
	r.cancel(lost)
}

// Reclaim is recoverStale: it takes back every job of other workers whose
// heartbeat lapsed past its own owner's StaleAfter, and cancels the jobs
// whose expiry passed before they started (see CancelExpired). Run calls
// it every ReclaimInterval. It never takes a lease this worker holds: the
// worker is alive, so are its leases, and a renewal that waited behind
// other processes' writes is late, not lost.
func (w *Worker) Reclaim(ctx context.Context) error {
	reclaimed, err := w.q.reclaim(ctx, w.heldLeases(), w.rowID())
	if err != nil {
		return err
	}
	for _, r := range reclaimed {
		w.opts.Logger.Warn("lite: reclaimed a job whose heartbeat lapsed",
			"job_id", r.JobID, "generation", r.Generation, "state", r.State)
		ev := Event{Kind: EventReclaimed, JobID: r.JobID, Generation: r.Generation, State: r.State}
		if r.State == StateAvailable {
			ev.NextRunAt = w.q.opts.Now() // it keeps its run_at, which has come
		}
		w.emit(ev)
	}
	expired, err := w.q.CancelExpired(ctx)
	if len(expired) > 0 {
		w.opts.Logger.Info("lite: cancelled jobs that expired before they started", "jobs", len(expired))
	}
	return err
}

func (w *Worker) activeRuns() []*run {
	w.mu.Lock()
	defer w.mu.Unlock()
	runs := make([]*run, 0, len(w.active))
	for _, r := range w.active {
		runs = append(runs, r)
	}
	return runs
}

func (w *Worker) heldLeases() []Lease { return leasesOf(w.activeRuns()) }

func leasesOf(runs []*run) []Lease {
	leases := make([]Lease, len(runs))
	for i, r := range runs {
		leases[i] = r.job.Lease()
	}
	return leases
}

func (w *Worker) heartbeatLogged(ctx context.Context) {
	if err := beatAgainIfBusy(ctx, w.Heartbeat); err != nil && ctx.Err() == nil {
		w.opts.Logger.Warn("lite: heartbeat failed; retrying next interval", "err", err)
	}
}

func (w *Worker) reclaimLogged(ctx context.Context) {
	if err := w.Reclaim(ctx); err != nil && ctx.Err() == nil { // a stop is no failure
		w.opts.Logger.Warn("lite: reclaim failed; retrying next interval", "err", err)
	}
}

// every runs fn every interval until the returned stop is called; stop
// waits for a running fn to return.
func (w *Worker) every(ctx context.Context, interval time.Duration, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				fn(ctx)
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// beatAgainIfBusy runs beat, and again at once for as long as it fails for want
// of the file's lock (ErrBusy) and ctx lasts: a beat that waited out the
// busy timeout behind another process's long write must land as soon as
// the lock is free, not an interval later, or its wait would run on into
// silence.
func beatAgainIfBusy(ctx context.Context, beat func(context.Context) error) error {
	for {
		err := beat(ctx)
		if !errors.Is(err, ErrBusy) || ctx.Err() != nil {
			return err
		}
	}
}
