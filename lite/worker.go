package lite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// AnyKind registers a handler for every kind that has none of its own.
const AnyKind = "*"

// Worker leases jobs, runs their handlers, keeps their leases alive with
// heartbeats and acks each outcome, fenced: it is the seeds' runOnce and
// recoverStale. Register handlers, then call Run or RunOnce.
//
// Everything the worker tracks about a running job is keyed by its lease
// (job id and generation), never by the id alone: a job released and
// leased again by the same worker is a new run, and the old run is
// stopped.
type Worker struct {
	q        *Queue
	opts     WorkerOptions
	handlers map[string]Handler
	running  atomic.Bool
	kindList []string // what it leases, fixed when it starts: handlers cannot change while it runs
	lanes    []*lane  // its slots, by queue

	mu     sync.Mutex
	active map[leaseKey]*run // runs holding a slot
	newest map[int64]*run    // the newest run of each job id in active
	freed  chan struct{}     // a slot freed; buffered, never blocks
	ran    chan struct{}     // closed once the Run, RunOnce or RunJob under way returned; nil before the first

	goroutines sync.WaitGroup // every handler goroutine, abandoned ones too

	row      atomic.Pointer[string]               // its row in lite_workers while Run keeps it, for its leases' worker_id
	acks     atomic.Pointer[completer]            // group commit of done-acks while running
	refill   *refill                              // the group commits' leases, while Run's loop runs (PostgreSQL)
	idleHook func()                               // tests: called after each round of leases, once the loop has decided how to wait
	noWAL    bool                                 // tests: poll as if the WAL could not be watched
	after    func(time.Duration) <-chan time.Time // time.After; tests: a timer they fire
}

// NewWorker makes a worker on q. Invalid options are an error.
func NewWorker(q *Queue, opts WorkerOptions) (*Worker, error) {
	opts, err := opts.withDefaults(q)
	if err != nil {
		return nil, err
	}
	return &Worker{
		q:        q,
		opts:     opts,
		handlers: map[string]Handler{},
		lanes:    lanesFor(opts),
		active:   map[leaseKey]*run{},
		newest:   map[int64]*run{},
		freed:    make(chan struct{}, 1),
		after:    time.After,
	}, nil
}

// Handle registers h for jobs of kind (AnyKind: every kind without its own
// handler). The worker leases only kinds it has handlers for. Register
// before Run; registering a kind twice or while running panics, as a
// programming error.
func (w *Worker) Handle(kind string, h Handler) {
	if w.running.Load() {
		panic("lite: Handle called on a running worker")
	}
	if problem := nameProblem(kind); problem != "" && kind != AnyKind {
		panic(fmt.Sprintf("lite: a handler for kind %q: the kind %s, so no job can have it", kind, problem))
	}
	if _, dup := w.handlers[kind]; dup {
		panic("lite: a handler for kind " + kind + " is already registered")
	}
	w.handlers[kind] = h
}

func (w *Worker) handler(kind string) Handler {
	if h, ok := w.handlers[kind]; ok {
		return h
	}
	return w.handlers[AnyKind]
}

// kinds is what the worker leases: nil (every kind) with an AnyKind
// handler, else the registered kinds.
func (w *Worker) kinds() []string {
	if _, ok := w.handlers[AnyKind]; ok {
		return nil
	}
	kinds := make([]string, 0, len(w.handlers))
	for k := range w.handlers {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

func (w *Worker) begin() error {
	if len(w.handlers) == 0 {
		return errors.New("worker: no handlers registered")
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("worker: already running")
	}
	w.kindList = w.kinds()
	w.mu.Lock()
	w.ran = make(chan struct{})
	w.mu.Unlock()
	return nil
}

// end undoes begin, as Run, RunOnce or RunJob returns, and lets Wait go on.
func (w *Worker) end() {
	w.running.Store(false)
	w.mu.Lock()
	close(w.ran)
	w.mu.Unlock()
}

// lease takes up to n jobs for lane l, or on a file as many as l has free
// slots once the lease's round runs, which also counts those its acks
// freed; asked is how many it asked for.
func (w *Worker) lease(ctx context.Context, l *lane, n int) (jobs []*Job, asked int, err error) {
	asked = n
	req := LeaseRequest{Queues: l.queues, Kinds: w.kindList, Max: n,
		LockedBy: w.opts.Identity, StaleAfter: w.opts.StaleAfter, worker: w.rowID()}
	if !w.q.engine.onServer() {
		req.slots = func() int {
			asked = w.free(l)
			return asked
		}
	}
	jobs, err = w.q.Lease(ctx, req)
	return jobs, asked, err
}

// Report is what RunOnce did. Parked counts the runs that Sleep or
// AwaitSignal parked (see docs/durable.md), apart from Snoozed.
type Report struct {
	Leased, Done, Failed, Snoozed, Parked, Released, LeaseLost int
}

// RunOnce leases one batch for each queue with a free slot (one batch of
// every queue when Queues is empty), each up to that queue's free slots,
// runs the handlers with heartbeats, acks each outcome and returns what it
// did. If ctx ends first the handlers are cancelled and their jobs
// released. If a lease fails, the jobs other queues leased are released
// unstarted and the error returned.
func (w *Worker) RunOnce(ctx context.Context) (Report, error) {
	if err := w.begin(); err != nil {
		return Report{}, err
	}
	defer w.end()
	var jobs []leased
	for _, l := range w.lanes {
		free := w.free(l)
		if free == 0 {
			continue
		}
		batch, _, err := w.lease(ctx, l, free)
		for _, j := range batch {
			jobs = append(jobs, leased{l, j})
		}
		if err != nil {
			w.releaseUnstarted(jobsOf(jobs))
			return Report{Leased: len(jobs), Released: len(jobs)}, err
		}
	}
	if ctx.Err() != nil {
		w.releaseUnstarted(jobsOf(jobs))
		return Report{Leased: len(jobs), Released: len(jobs)}, nil
	}
	runs := w.runLeased(ctx, jobs)

	rep := Report{Leased: len(jobs)}
	for _, r := range runs {
		switch r.outcome {
		case EventDone:
			rep.Done++
		case EventFailed:
			rep.Failed++
		case EventSnoozed:
			rep.Snoozed++
		case EventParked:
			rep.Parked++
		case EventReleased:
			rep.Released++
		case EventLeaseLost:
			rep.LeaseLost++
		}
	}
	return rep, nil
}

// Run works until ctx ends, then shuts down gracefully: it stops leasing,
// lets running handlers finish within ShutdownGrace, cancels the rest with
// ErrShutdown as the cause and releases their leases. It returns nil after
// a clean stop. A lease that fails in a way waiting cannot clear (the
// file is read-only or not a lite database: ErrReadOnly, ErrNotLite; with
// StopWhenIdle, a full disk: ErrFull) ends Run the same graceful way, with
// that error; other failures (a lock held too long) are retried. While it runs it also fires every due schedule (see
// Schedule), whatever queues it serves.
//
// Run does not wait for a handler that ignores cancellation: after a
// second ShutdownGrace it releases that handler's lease, frees its slot and
// returns. Such a handler writes nothing through the queue when it
// finally returns (its outcome is reported as EventLeaseLost). Call Wait
// to wait for it, for example before closing the queue its code uses.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.begin(); err != nil {
		return err
	}
	defer w.end()
	watcher, err := w.q.watchChanges(ctx)
	if err != nil {
		return err
	}
	defer watcher.close()

	handlerCtx, stopHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHandlers(nil)
	// Heartbeats go on through the shutdown grace, while handlers finish.
	background := context.WithoutCancel(ctx)
	stopBeats := w.every(background, w.opts.HeartbeatInterval, w.heartbeatLogged)
	stopReclaims := w.every(background, w.opts.ReclaimInterval, w.reclaimLogged)
	stopAcks := w.startAcks()
	stopAnnouncing := w.startAnnouncing(background)
	stopCleaning := w.startCleaning(background)

	// Other processes' commits: reported by the WAL watch or the server's
	// notifications where there are some (the poll is then a slow safety
	// net), else found by the poll.
	poll := w.opts.PollInterval
	var commits <-chan struct{}
	if !w.noWAL {
		if ch, stop, err := w.q.watchCommits(); err == nil {
			defer stop()
			commits, poll = ch, max(poll, walSafetyPoll)
		}
	}

	commits, stopLeaseWatch := w.watchLeases(background, commits)
	commits, stopFiring := w.startFiring(ctx, commits, poll)
	w.refill = w.startRefill(handlerCtx)
	err = w.loop(ctx, handlerCtx, watcher, commits, poll)
	w.refill.stop()
	stopFiring()
	stopReclaims()
	stopCleaning()
	w.shutdown(stopHandlers)
	stopLeaseWatch()
	stopAnnouncing()
	stopAcks()
	stopBeats()
	return err
}

// Wait blocks until the Run, RunOnce or RunJob under way (if any) has
// returned, with every outcome it wrote settled, and every handler this
// worker started has returned, including those Run stopped waiting for
// because they ignored shutdown. It may be called from another goroutine
// while Run runs; a Run that begins after Wait was called is not waited
// for.
func (w *Worker) Wait() {
	w.mu.Lock()
	ran := w.ran
	w.mu.Unlock()
	if ran != nil {
		<-ran
	}
	// No run starts a handler once it returned: the count only falls.
	w.goroutines.Wait()
}

// busy is how many runs hold a slot.
func (w *Worker) busy() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.active)
}

// waitRuns waits until no run holds a slot, or until deadline fires (nil:
// never), and reports whether none does.
func (w *Worker) waitRuns(deadline <-chan time.Time) bool {
	for w.busy() > 0 {
		select {
		case <-w.freed:
		case <-deadline:
			return w.busy() == 0
		}
	}
	return true
}

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
func (w *Worker) loop(ctx, handlerCtx context.Context, watcher *changeWatcher, commits <-chan struct{}, poll time.Duration) error {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	// lookedAgain is set once a round found the worker idle with nothing
	// running: a worker stopping when idle stops only after a round after
	// that look leased nothing either, since the last job's ack may have
	// committed between a round's lease and its look for running jobs (or
	// the jobs a round leased may all have run and been acked by then),
	// and made a dependent available that the lease did not see. A round
	// after the look sees every commit before it.
	lookedAgain := false
	for {
		wake := w.q.wakeup.wait()
		leased, ok, err := w.leaseRound(ctx, handlerCtx)
		if !ok {
			return err
		}
		s := w.laneState()
		if w.idleHook != nil {
			w.idleHook()
		}
		if w.opts.StopWhenIdle && s.idle && !w.anyRunning(ctx) {
			if lookedAgain && leased == 0 {
				return nil
			}
			lookedAgain = true
			continue
		}
		lookedAgain = false
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
			// A full lane may have a backlog, and a queue at its
			// MaxRunning may take a job once one of its own ends: a slot
			// freed must not wait for the other lanes' work. A worker
			// stopping when idle looks again once a job of its own ends:
			// it may have been the last, and its settling write wakes
			// nothing else (a dead job, a retry's backoff).
			var freed <-chan struct{}
			if s.anyFull || s.anyHeld || w.opts.StopWhenIdle {
				freed = w.freed
			}
			ok = w.waitForWork(ctx, wake, freed, watcher, commits, timer, poll, s.nextRunAt)
		}
		if !ok {
			return nil
		}
	}
}

// anyRunningSQL says whether work the worker could lease may yet come:
// a job it could lease is running in any process (it may come back to be
// started: a failed attempt's retry, a reclaim of a lapsed lease), or a
// job that one of its blocked jobs waits for, directly or through other
// blocked jobs, is running or startable now (due, in a queue that lets it
// start: not paused, full or out of starts), whatever its queue and kind
// (its end may unblock the worker's job). Blocked jobs of other queues
// and kinds, and the jobs they wait for, are not its work.
var anyRunningSQL = stmt{
	sqlite: `with recursive upstream(id) as (
    select d.depends_on from lite_jobs b join lite_deps d on d.job_id = b.id
    where b.state = 'blocked' and d.resolved = 0
      and (?1 is null or b.queue in (select value from json_each(?1)))
      and (?2 is null or b.kind in (select value from json_each(?2)))
    union
    select d.depends_on from upstream u join lite_jobs b on b.id = u.id join lite_deps d on d.job_id = b.id
    where b.state = 'blocked' and d.resolved = 0),
` + flowCTE(3).sqlite + `
select exists (select 1 from lite_jobs where state = 'running'
  and (?1 is null or queue in (select value from json_each(?1)))
  and (?2 is null or kind in (select value from json_each(?2))))
  or exists (select 1 from upstream u join lite_jobs p on p.id = u.id
    where p.state = 'running' or (p.state = 'available' and p.run_at <= ?3
      and not exists (select 1 from lite_flow f where f.queue = p.queue and f.n <= 0)))`,
	postgres: `with recursive upstream(id) as (
    select d.depends_on from lite_jobs b join lite_deps d on d.job_id = b.id
    where b.state = 'blocked' and d.resolved = 0
      and ($1::jsonb is null or b.queue in (select jsonb_array_elements_text($1::jsonb)))
      and ($2::jsonb is null or b.kind in (select jsonb_array_elements_text($2::jsonb)))
    union
    select d.depends_on from upstream u join lite_jobs b on b.id = u.id join lite_deps d on d.job_id = b.id
    where b.state = 'blocked' and d.resolved = 0),
` + flowCTE(3).postgres + `
select exists (select 1 from lite_jobs where state = 'running'
  and ($1::jsonb is null or queue in (select jsonb_array_elements_text($1::jsonb)))
  and ($2::jsonb is null or kind in (select jsonb_array_elements_text($2::jsonb))))
  or exists (select 1 from upstream u join lite_jobs p on p.id = u.id
    where p.state = 'running' or (p.state = 'available' and p.run_at <= $3
      and not exists (select 1 from lite_flow f where f.queue = p.queue and f.n <= 0)))`,
}

// anyRunning reports whether anyRunningSQL finds a job; true if it cannot
// tell, so that a worker stopping when idle waits rather than leave a job
// behind.
func (w *Worker) anyRunning(ctx context.Context) bool {
	var running bool
	err := w.q.r.QueryRowContext(ctx, w.q.sql(anyRunningSQL), nullList(w.opts.queueNames()), nullList(w.kindList),
		w.q.nowMillis()).Scan(&running)
	return err != nil || running
}

// leaseRound leases for every lane with a free slot and starts what it
// got, noting on each lane whether more may wait and when its next
// scheduled job comes due. It returns how many jobs it leased, and false
// if ctx ended or a lease failed in a way that waiting cannot clear (then
// with that error).
func (w *Worker) leaseRound(ctx, handlerCtx context.Context) (leased int, ok bool, err error) {
	for _, l := range w.lanes {
		free := w.free(l)
		if free == 0 {
			continue
		}
		jobs, asked, err := w.lease(ctx, l, free)
		if ctx.Err() != nil {
			// A lease that committed as the worker was told to stop
			// still hands out its jobs: give them back.
			w.releaseUnstarted(jobs)
			return leased, false, nil
		}
		for _, j := range jobs {
			w.start(handlerCtx, l, j)
		}
		leased += len(jobs)
		l.backlog = err == nil && len(jobs) == asked
		w.refill.arm(l.backlog)
		if err != nil && w.cannotClear(err) {
			return leased, false, fmt.Errorf("work: %w", err)
		}
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
	return leased, true, nil
}

// cannotClear says whether a failed lease must end Run rather than be
// tried again: a file lite may not write, or that is not a lite database,
// stays so however long a worker waits; a full disk may get room, but a
// worker stopping when idle is a run that must end (a cron job), not one
// that waits for an operator.
func (w *Worker) cannotClear(err error) bool {
	return errors.Is(err, ErrReadOnly) || errors.Is(err, ErrNotLite) ||
		(w.opts.StopWhenIdle && errors.Is(err, ErrFull))
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
