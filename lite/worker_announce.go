package lite

import (
	"context"
	"time"
)

// unhandledCheck is how often a running worker looks in its queues for
// ready jobs that no running worker takes. Only jobs due for at least that
// long are warned about, so that a worker starting a moment after another
// is not taken for missing.
const unhandledCheck = time.Minute

// unhandledRepeat is how often the warning about one queue and kind is
// repeated while its jobs keep waiting.
const unhandledRepeat = time.Hour

// announceTimeout bounds the write that retires a stopping worker's row.
const announceTimeout = 5 * time.Second

// startAnnouncing writes the worker's row, keeps it fresh every heartbeat
// and looks for unhandled jobs every unhandledCheck; the returned stop
// removes the row. The row is the liveness of the worker's leases (see
// reclaimSQL): it is written before the worker's first lease, and a
// lease names it only once it was written. A worker whose announce
// failed leases with no row named, its jobs judged by their own
// heartbeats, until a renewal writes the row.
func (w *Worker) startAnnouncing(ctx context.Context) (stop func()) {
	a := w.q.newAnnouncement(w.opts.Identity, w.opts.queueNames(), w.kindList, w.opts.slots(), w.opts.StaleAfter)
	if err := a.announce(ctx); err != nil {
		if ctx.Err() == nil {
			w.opts.Logger.Warn("lite: announcing the worker failed; retrying at the next heartbeat", "err", err)
		}
	} else {
		w.row.Store(&a.id)
	}
	stopSeen := w.every(ctx, w.opts.HeartbeatInterval, func(ctx context.Context) {
		if err := beatAgainIfBusy(ctx, a.seen); err != nil {
			if ctx.Err() == nil {
				w.opts.Logger.Warn("lite: renewing the worker's announcement failed", "err", err)
			}
			return
		}
		w.row.Store(&a.id)
	})
	warned := map[[2]string]time.Time{}
	stopChecks := w.every(ctx, unhandledCheck, func(ctx context.Context) { w.warnUnhandled(ctx, warned) })
	return func() {
		stopChecks()
		stopSeen()
		w.row.Store(nil)
		retireCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
		defer cancel()
		if err := a.retire(retireCtx); err != nil {
			w.opts.Logger.Warn("lite: removing the worker's announcement failed; it goes stale by itself", "err", err)
		}
	}
}

// rowID is the worker's row in lite_workers, or "" while it has none.
func (w *Worker) rowID() string {
	if id := w.row.Load(); id != nil {
		return *id
	}
	return ""
}

// warnUnhandled warns about each queue and kind in the worker's queues
// whose ready jobs no running worker takes, once when first seen and then
// every unhandledRepeat while they wait. warned remembers when each was
// last warned about; a group that is gone is forgotten, so its return is
// warned about at once.
func (w *Worker) warnUnhandled(ctx context.Context, warned map[[2]string]time.Time) {
	groups, err := w.q.unhandled(ctx, w.opts.queueNames())
	if err != nil {
		if ctx.Err() == nil {
			w.opts.Logger.Warn("lite: looking for unhandled jobs failed", "err", err)
		}
		return
	}
	now := w.q.opts.Now()
	seen := map[[2]string]bool{}
	for _, g := range groups {
		key := [2]string{g.Queue, g.Kind}
		seen[key] = true
		if g.OldestReady < unhandledCheck {
			continue
		}
		if last, ok := warned[key]; ok && now.Sub(last) < unhandledRepeat {
			continue
		}
		warned[key] = now
		w.opts.Logger.Warn("lite: ready jobs wait that no running worker takes: no worker serves their queue with a handler for their kind",
			"queue", g.Queue, "kind", g.Kind, "count", g.Count, "oldest_ready", g.OldestReady)
	}
	for key := range warned {
		if !seen[key] {
			delete(warned, key)
		}
	}
}
