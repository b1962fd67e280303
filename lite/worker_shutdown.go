package lite

import (
	"context"
	"time"
)

// shutdown waits ShutdownGrace for handlers, cancels those still running
// with ErrShutdown (they release their jobs as they return), and after a
// second grace gives up on handlers that ignore cancellation: it releases
// their leases, so their outcomes are fenced off, and frees their slots.
// It returns once no run holds a slot, so that nothing of this Run writes
// after it.
func (w *Worker) shutdown(stopHandlers context.CancelCauseFunc) {
	grace := time.NewTimer(w.opts.ShutdownGrace)
	defer grace.Stop()
	if w.waitRuns(grace.C) {
		return
	}
	stopHandlers(ErrShutdown)
	grace.Reset(w.opts.ShutdownGrace)
	if w.waitRuns(grace.C) {
		return
	}
	w.mu.Lock()
	var stuck []*run
	for _, r := range w.active {
		// A run already settling is writing its outcome, under its own
		// timeout: it frees its slot by itself.
		if r.settling.CompareAndSwap(false, true) {
			stuck = append(stuck, r)
			w.vacate(r)
		}
	}
	w.mu.Unlock()
	for _, r := range stuck {
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		err := retryBusy(ctx, func() error { return w.q.release(ctx, r.job.Lease()) })
		cancel()
		w.opts.Logger.Warn("lite: handler ignored shutdown; its lease is released and its outcome will be skipped",
			"job_id", r.job.ID, "generation", r.job.Generation, "err", err)
	}
	w.waitRuns(nil)
}
