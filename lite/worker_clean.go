package lite

import (
	"context"
	"math/rand/v2"
	"time"
)

// cleanFirstWithin bounds the wait before a worker's first Clean: soon
// after it starts, at a random moment, so a fleet restarted at once
// spreads out.
const cleanFirstWithin = 10 * time.Second

// startCleaning runs Clean about every CleanInterval until the returned
// stop, which waits for a run in progress to finish its batch. Processes
// sharing a file need no claim to take turns: every delete is idempotent
// (a job already gone is simply not found again), SQLite runs one writer
// at a time, and PostgreSQL's cleaners skip the rows another one locked,
// so two cleaning at once only split the work; the jitter makes even that
// rare. Failures are logged and tried again at the next run.
func (w *Worker) startCleaning(ctx context.Context) (stop func()) {
	if w.opts.NoCleaning {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTimer(jitter(min(cleanFirstWithin, w.opts.CleanInterval)))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			w.cleanLogged(ctx)
			t.Reset(w.opts.CleanInterval/2 + jitter(w.opts.CleanInterval))
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// jitter is a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

func (w *Worker) cleanLogged(ctx context.Context) {
	rep, err := w.q.Clean(ctx)
	if err != nil && ctx.Err() == nil {
		w.opts.Logger.Warn("lite: deleting finished jobs past their retention failed; trying again at the next run", "err", err)
	}
	if rep.Deleted > 0 {
		w.opts.Logger.Debug("lite: deleted finished jobs past their retention",
			"deleted", rep.Deleted, "batches", rep.Batches, "longest_batch", rep.LongestBatch, "freed_pages", rep.FreedPages)
	}
}
