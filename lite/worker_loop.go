package lite

import (
	"context"
	"time"
)

// walSafetyPoll is how often a worker that is told of commits (by the WAL
// watch, or the server's notifications) polls anyway, in case one was not
// reported.
const walSafetyPoll = time.Second

// leaseRetry is how soon a worker tries again after a lease failed (a
// lock held past the busy timeout, a full disk); each failure in a row
// doubles the wait, up to leaseRetryMax.
const (
	leaseRetry    = 100 * time.Millisecond
	leaseRetryMax = 5 * time.Second
)

// loop leases whenever a slot is free and work may be there, then sleeps
// until that may change. Each round leases for every lane with a free
// slot, each lease asking for all of its lane's free slots at once: a
// backlog is taken in batches as handlers finish, a free slot never waits
// for another job to finish, and a backlog in one lane never delays
// another lane's jobs.
func (w *Worker) loop(ctx, handlerCtx context.Context, watcher *changeWatcher, commits <-chan struct{}, poll time.Duration) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		wake := w.q.wakeup.wait()
		if !w.leaseRound(ctx, handlerCtx) {
			return
		}
		s := w.laneState()
		if w.idleHook != nil {
			w.idleHook()
		}
		if w.opts.StopWhenIdle && s.idle && !w.anyRunning(ctx) {
			return
		}
		var ok bool
		switch {
		case s.retryIn > 0:
			// Only time may end what failed the lease, and the failed
			// commit's own write to the WAL would wake the worker at once.
			ok = w.waitRetry(ctx, s.retryIn)
		case !s.anyFree:
			// Every slot is busy: nothing can be leased until one frees,
			// whatever comes due or is committed meanwhile.
			ok = w.waitForSlot(ctx)
		case s.backlog:
			ok = true // more may wait, and a slot is free again already
		default:
			// A full lane may have a backlog, a queue at its MaxRunning
			// may take a job once one of its own ends, and a worker that
			// stops when idle may be idle once its last slot frees (a
			// failure's retry not due yet wakes nothing else): a slot
			// freed must not wait for the other lanes' work.
			var freed <-chan struct{}
			if s.anyFull || s.anyHeld || w.opts.StopWhenIdle {
				freed = w.freed
			}
			ok = w.waitForWork(ctx, wake, freed, watcher, commits, timer, poll, s.nextRunAt)
		}
		if !ok {
			return
		}
	}
}

// anyRunningSQL says whether a job the worker could lease is running in
// any process: it may yet come back to be started (a failed attempt's
// retry, a reclaim of a lapsed lease).
var anyRunningSQL = stmt{
	sqlite: `select exists (select 1 from lite_jobs where state = 'running'
  and (?1 is null or queue in (select value from json_each(?1)))
  and (?2 is null or kind in (select value from json_each(?2))))`,
	postgres: `select exists (select 1 from lite_jobs where state = 'running'
  and ($1::jsonb is null or queue in (select jsonb_array_elements_text($1::jsonb)))
  and ($2::jsonb is null or kind in (select jsonb_array_elements_text($2::jsonb))))`,
}

// anyRunning reports whether anyRunningSQL finds a job; true if it cannot
// tell, so that a worker stopping when idle waits rather than leave a job
// behind.
func (w *Worker) anyRunning(ctx context.Context) bool {
	var running bool
	err := w.q.r.QueryRowContext(ctx, w.q.sql(anyRunningSQL), nullList(w.opts.queueNames()), nullList(w.kindList)).Scan(&running)
	return err != nil || running
}

// leaseRound leases for every lane with a free slot and starts what it
// got, noting on each lane whether more may wait and when its next
// scheduled job comes due. It returns false if ctx ended.
func (w *Worker) leaseRound(ctx, handlerCtx context.Context) bool {
	for _, l := range w.lanes {
		free := w.free(l)
		if free == 0 {
			continue
		}
		jobs, err := w.lease(ctx, l, free)
		if ctx.Err() != nil {
			// A lease that committed as the worker was told to stop
			// still hands out its jobs: give them back.
			w.releaseUnstarted(jobs)
			return false
		}
		for _, j := range jobs {
			w.start(handlerCtx, l, j)
		}
		l.backlog = err == nil && len(jobs) == free
		if err != nil {
			l.retryIn = min(max(2*l.retryIn, leaseRetry), leaseRetryMax)
			w.opts.Logger.Warn("lite: lease failed; retrying", "err", err, "in", l.retryIn)
			continue
		}
		l.retryIn = 0
		if !l.backlog {
			if l.nextRunAt, l.held, err = w.q.nextRunAt(ctx, l.queues, w.kindList); err != nil && ctx.Err() == nil {
				w.opts.Logger.Warn("lite: reading the next run_at failed", "err", err)
			}
		}
	}
	return true
}

// waitRetry sleeps d after a failed lease, whatever wakes the worker
// meanwhile; false if ctx ended.
func (w *Worker) waitRetry(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-w.after(d):
		return true
	}
}

// waitForSlot sleeps until a handler frees its slot; false if ctx ended.
func (w *Worker) waitForSlot(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-w.freed:
		return true
	}
}

// waitForWork sleeps, with a slot free, until a job may be there to lease:
// a wake-up from this process, a slot freed (when freed is not nil), a
// commit by another process (reported by the WAL watch, or seen by the
// poll), or the earliest scheduled run_at. It returns false if ctx ended.
func (w *Worker) waitForWork(ctx context.Context, wake, freed <-chan struct{}, watcher *changeWatcher,
	commits <-chan struct{}, timer *time.Timer, poll time.Duration, nextRunAt time.Time) bool {
	for {
		timer.Reset(w.pollWait(poll, nextRunAt))
		select {
		case <-ctx.Done():
			return false
		case <-wake:
			return true
		case <-freed:
			return true
		case <-commits:
			return true
		case <-timer.C:
			// A watcher that fails (the file is gone, the queue closed)
			// reports no change: the worker then wakes only when a job
			// comes due, rather than spinning on the error.
			changed, _ := watcher.changed(ctx)
			due := !nextRunAt.IsZero() && !w.q.opts.Now().Before(nextRunAt)
			if changed || due {
				return true
			}
		}
	}
}

// pollWait is the poll interval, or less when a scheduled job comes due
// sooner.
func (w *Worker) pollWait(poll time.Duration, nextRunAt time.Time) time.Duration {
	d := poll
	if !nextRunAt.IsZero() {
		d = min(d, max(nextRunAt.Sub(w.q.opts.Now()), 0))
	}
	return d
}
