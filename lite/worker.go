package lite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// WorkerOptions configure a Worker. The zero value of each field is its
// default.
type WorkerOptions struct {
	// Queues to take jobs from; empty means every queue.
	Queues []string
	// Concurrency is how many handlers run at once. Default 8.
	Concurrency int
	// HeartbeatInterval is how often the worker renews its leases, all in
	// one statement. Default 5s.
	HeartbeatInterval time.Duration
	// StaleAfter is how long a job's heartbeat may lapse before any
	// worker reclaims it. It must be at least three heartbeats, so that
	// one slow renewal never costs a lease. Default six heartbeats.
	StaleAfter time.Duration
	// ReclaimInterval is how often the worker reclaims lapsed jobs of any
	// worker (recoverStale). Default HeartbeatInterval.
	ReclaimInterval time.Duration
	// PollInterval is how often an idle worker checks for commits by
	// other processes (PRAGMA data_version: no write, no query of the
	// table). Jobs enqueued in this process wake it at once. On Linux a
	// write to the file's WAL wakes it too (inotify), and it polls only
	// as a safety net, at most once a second. Default 5ms.
	PollInterval time.Duration
	// Timeout bounds each handler run; KindTimeouts overrides it per
	// kind. Zero means no timeout.
	Timeout      time.Duration
	KindTimeouts map[string]time.Duration
	// ShutdownGrace is how long running handlers may finish after Run's
	// context ends before they are cancelled and their leases released.
	// Default 10s.
	ShutdownGrace time.Duration
	// Logger receives warnings (lost leases, reclaims, failed writes).
	// Default slog.Default().
	Logger *slog.Logger
	// Identity is written to locked_by. Default the queue's Identity.
	Identity string
	// OnEvent, if set, is called for every event, from the goroutine
	// where it happened. It must not block.
	OnEvent func(Event)
}

// Defaults for WorkerOptions.
const (
	DefaultConcurrency       = 8
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultPollInterval      = 5 * time.Millisecond
	DefaultShutdownGrace     = 10 * time.Second
)

// AnyKind registers a handler for every kind that has none of its own.
const AnyKind = "*"

func (o WorkerOptions) withDefaults(q *Queue) (WorkerOptions, error) {
	if o.Concurrency < 0 || o.HeartbeatInterval < 0 || o.StaleAfter < 0 || o.ReclaimInterval < 0 ||
		o.PollInterval < 0 || o.Timeout < 0 || o.ShutdownGrace < 0 {
		return o, errors.New("worker options: negative value")
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 6 * o.HeartbeatInterval
	}
	if o.StaleAfter < 3*o.HeartbeatInterval {
		return o, fmt.Errorf("worker options: StaleAfter %s is under three heartbeats of %s",
			o.StaleAfter, o.HeartbeatInterval)
	}
	if o.ReclaimInterval == 0 {
		o.ReclaimInterval = o.HeartbeatInterval
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Identity == "" {
		o.Identity = q.opts.Identity
	}
	return o, nil
}

// Worker leases jobs, runs their handlers, keeps their leases alive with
// heartbeats and acks each outcome, fenced: it is the seeds' runOnce and
// recoverStale. Register handlers, then call Run or RunOnce.
type Worker struct {
	q        *Queue
	opts     WorkerOptions
	handlers map[string]Handler
	running  atomic.Bool
	kindList []string // what it leases, fixed when it starts: handlers cannot change while it runs

	mu     sync.Mutex
	active map[int64]*run // by job id
	freed  chan struct{}  // a slot freed; buffered, never blocks
	wg     sync.WaitGroup // handler goroutines

	acks     atomic.Pointer[completer] // group commit of done-acks while running
	idleHook func()                    // tests: called each time the loop goes to sleep
	noWAL    bool                      // tests: poll as if the WAL could not be watched
}

// walSafetyPoll is how often a worker that watches the WAL polls anyway,
// in case a write was not reported.
const walSafetyPoll = time.Second

// leaseRetry is how soon a worker tries again after a lease failed (a
// lock held past the busy timeout, a full disk).
const leaseRetry = 100 * time.Millisecond

// run is one job in a handler.
type run struct {
	job    *Job
	ctx    context.Context
	cancel context.CancelCauseFunc
	// settling is set before the outcome is written, so a heartbeat that
	// finds the lease gone after that knows the worker itself ended it.
	settling atomic.Bool
	outcome  EventKind
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
		active:   map[int64]*run{},
		freed:    make(chan struct{}, 1),
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
	return nil
}

func (w *Worker) free() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.opts.Concurrency - len(w.active)
}

func (w *Worker) lease(ctx context.Context, n int) ([]*Job, error) {
	return w.q.Lease(ctx, LeaseRequest{Queues: w.opts.Queues, Kinds: w.kindList, Max: n, LockedBy: w.opts.Identity})
}

// Report is what RunOnce did.
type Report struct {
	Leased, Done, Failed, Snoozed, Released, LeaseLost int
}

// RunOnce leases one batch, up to the free concurrency, runs the handlers
// with heartbeats, acks each outcome and returns what it did. If ctx ends
// first the handlers are cancelled and their jobs released.
func (w *Worker) RunOnce(ctx context.Context) (Report, error) {
	if err := w.begin(); err != nil {
		return Report{}, err
	}
	defer w.running.Store(false)
	jobs, err := w.lease(ctx, w.free())
	if err != nil {
		return Report{}, err
	}
	handlerCtx, stopHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHandlers(nil)
	stopOnCancel := context.AfterFunc(ctx, func() { stopHandlers(ErrShutdown) })
	defer stopOnCancel()
	stopBeats := w.every(ctx, w.opts.HeartbeatInterval, w.heartbeatLogged)
	stopAcks := w.startAcks()

	runs := make([]*run, len(jobs))
	for i, j := range jobs {
		runs[i] = w.start(handlerCtx, j)
	}
	w.wg.Wait()
	stopAcks()
	stopBeats()

	rep := Report{Leased: len(jobs)}
	for _, r := range runs {
		switch r.outcome {
		case EventDone:
			rep.Done++
		case EventFailed:
			rep.Failed++
		case EventSnoozed:
			rep.Snoozed++
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
// a clean stop.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.begin(); err != nil {
		return err
	}
	defer w.running.Store(false)
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

	// Other processes' commits: reported by the WAL watch where there is
	// one (the poll is then a slow safety net), else found by the poll.
	poll := w.opts.PollInterval
	var walWrites <-chan struct{}
	if !w.noWAL && w.q.path != "" {
		if ch, stop, err := watchWAL(w.q.path); err == nil {
			defer stop()
			walWrites, poll = ch, max(poll, walSafetyPoll)
		}
	}

	w.loop(ctx, handlerCtx, watcher, walWrites, poll)
	stopReclaims()
	w.shutdown(stopHandlers)
	stopAcks()
	stopBeats()
	return nil
}

// loop leases whenever slots are free and work may be there: after a
// wake-up from this process, a commit seen by the watcher, a freed slot,
// or the earliest scheduled run_at. While a backlog waits and handlers
// run, it leases only once a quarter of the slots are free: one lease
// statement per freed slot would cost more than the jobs.
func (w *Worker) loop(ctx, handlerCtx context.Context, watcher *changeWatcher, walWrites <-chan struct{}, poll time.Duration) {
	var nextRunAt time.Time
	var backlog bool // the last lease filled every slot it asked for
	timer := time.NewTimer(0)
	defer timer.Stop()
	queues, kinds := w.opts.Queues, w.kindList
	batch := max(1, w.opts.Concurrency/2)
	for {
		wake := w.q.wakeup.wait()
		if free := w.free(); free > 0 && (free >= batch || free == w.opts.Concurrency || !backlog) {
			jobs, err := w.lease(ctx, free)
			backlog = err == nil && len(jobs) == free
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				// Nothing may change in the file to wake the worker (a lock
				// released by a rollback writes nothing): come back on time.
				w.opts.Logger.Warn("lite: lease failed; retrying", "err", err, "in", leaseRetry)
				nextRunAt = w.q.opts.Now().Add(leaseRetry)
			}
			for _, j := range jobs {
				w.start(handlerCtx, j)
			}
			if err == nil && len(jobs) < free {
				if nextRunAt, err = w.q.nextRunAt(ctx, queues, kinds); err != nil && ctx.Err() == nil {
					w.opts.Logger.Warn("lite: reading the next run_at failed", "err", err)
				}
			}
		}
		if w.idleHook != nil {
			w.idleHook()
		}
		// A worker working through a backlog leases as slots free; only an
		// idle one needs to hear of other processes' commits, and hearing
		// of every commit of its own would cost it a wake-up each.
		var commits <-chan struct{}
		if !backlog {
			commits = walWrites
		}
		for waiting := true; waiting; {
			timer.Reset(w.pollWait(poll, nextRunAt))
			select {
			case <-ctx.Done():
				return
			case <-wake:
				waiting = false
			case <-w.freed:
				waiting = false
			case <-commits:
				waiting = false
			case <-timer.C:
				changed, err := watcher.changed(ctx)
				due := !nextRunAt.IsZero() && !w.q.opts.Now().Before(nextRunAt)
				waiting = err == nil && !changed && !due
			}
			timer.Stop()
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

func (w *Worker) start(handlerCtx context.Context, j *Job) *run {
	r := &run{job: j}
	r.ctx, r.cancel = context.WithCancelCause(handlerCtx)
	w.mu.Lock()
	w.active[j.ID] = r
	w.mu.Unlock()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.execute(r)
	}()
	return r
}

func (w *Worker) finish(r *run) {
	r.cancel(nil)
	w.mu.Lock()
	delete(w.active, r.job.ID)
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
}

// execute runs the handler and settles its outcome.
func (w *Worker) execute(r *run) {
	defer w.finish(r)
	w.emit(Event{Kind: EventStarted, JobID: r.job.ID, Job: r.job, Generation: r.job.Generation})
	ctx := r.ctx
	timeout := w.timeout(r.job.Kind)
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimeout)
		defer cancel()
	}
	var done success
	ctx = context.WithValue(ctx, outcomeKey{}, &done)
	h := w.handler(r.job.Kind)
	start := w.q.opts.Now()
	var err error
	if h == nil {
		err = Permanent(fmt.Errorf("no handler for kind %q", r.job.Kind))
	} else {
		err = call(ctx, h, r.job)
	}
	if err != nil && errors.Is(context.Cause(ctx), errTimeout) {
		err = fmt.Errorf("%w after %s: %w", errTimeout, timeout, err)
	}
	w.settle(r, err, done, w.q.opts.Now().Sub(start))
}

// ackTimeout bounds the write that settles a run, which runs even after
// the handler's context ended so that no job is left stuck.
const ackTimeout = 30 * time.Second

// settle writes the run's outcome under its lease. A lost lease is
// warn-and-skip: nothing is written, and a warning names both generations.
func (w *Worker) settle(r *run, err error, done success, elapsed time.Duration) {
	r.settling.Store(true)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), ackTimeout)
	defer cancel()
	l := r.job.Lease()
	ev := Event{JobID: r.job.ID, Job: r.job, Generation: l.Generation, Elapsed: elapsed}
	var snooze snoozeError
	var ackErr error
	switch {
	case err == nil:
		ev.Kind, ackErr = EventDone, retryBusy(ctx, func() error { return w.ackDone(ctx, l, done) })
		// The handler's own writes failing, or a result too large to
		// store, fail the attempt; the latter for good.
		if ackErr != nil && !errors.Is(ackErr, ErrLeaseLost) && !errors.Is(ackErr, ErrBusy) &&
			(done.writes != nil || errors.Is(ackErr, ErrTooLarge)) {
			if errors.Is(ackErr, ErrTooLarge) {
				ackErr = Permanent(ackErr)
			}
			failure := ackErr
			ev.Kind, ev.Err = EventFailed, failure
			ackErr = retryBusy(ctx, func() error { return w.q.AckFailed(ctx, l, failure) })
		}
	case errors.Is(context.Cause(r.ctx), ErrShutdown):
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
	}
	r.outcome = ev.Kind
	w.emit(ev)
}

func (w *Worker) ackDone(ctx context.Context, l Lease, done success) error {
	if done.writes != nil {
		return w.q.complete(ctx, l, done.result, done.writes)
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

// Heartbeat renews every lease the worker holds, in one statement, and
// cancels the handler of each lease found lost, with ErrLeaseLost as the
// cause. Run calls it every HeartbeatInterval; call it yourself only to
// drive a worker by hand, as tests do.
func (w *Worker) Heartbeat(ctx context.Context) error {
	w.mu.Lock()
	runs := make([]*run, 0, len(w.active))
	for _, r := range w.active {
		runs = append(runs, r)
	}
	w.mu.Unlock()
	if len(runs) == 0 {
		return nil
	}
	leases := make([]Lease, len(runs))
	for i, r := range runs {
		leases[i] = r.job.Lease()
	}
	results, err := w.q.Renew(ctx, leases)
	if err != nil {
		return err
	}
	for i, lost := range results {
		r := runs[i]
		if lost == nil || r.settling.Load() {
			continue
		}
		w.opts.Logger.Warn("lite: lease lost; stopping its handler",
			"job_id", r.job.ID, "kind", r.job.Kind, "lease_generation", r.job.Generation)
		r.cancel(lost)
	}
	return nil
}

// Reclaim is recoverStale: it takes back every job, of any worker, whose
// heartbeat lapsed for StaleAfter. Run calls it every ReclaimInterval.
func (w *Worker) Reclaim(ctx context.Context) error {
	reclaimed, err := w.q.ReclaimOrphaned(ctx, w.opts.StaleAfter)
	if err != nil {
		return err
	}
	for _, r := range reclaimed {
		w.opts.Logger.Warn("lite: reclaimed a job whose heartbeat lapsed",
			"job_id", r.JobID, "generation", r.Generation, "state", r.State)
		w.emit(Event{Kind: EventReclaimed, JobID: r.JobID, Generation: r.Generation})
	}
	return nil
}

func (w *Worker) heartbeatLogged(ctx context.Context) {
	if err := w.Heartbeat(ctx); err != nil {
		w.opts.Logger.Warn("lite: heartbeat failed; retrying next interval", "err", err)
	}
}

func (w *Worker) reclaimLogged(ctx context.Context) {
	if err := w.Reclaim(ctx); err != nil {
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

// shutdown waits ShutdownGrace for handlers, cancels those still running
// with ErrShutdown (they release their jobs as they return), and after a
// second grace releases the leases of handlers that ignore cancellation:
// their late acks are then fenced off.
func (w *Worker) shutdown(stopHandlers context.CancelCauseFunc) {
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	grace := time.NewTimer(w.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
		return
	case <-grace.C:
	}
	stopHandlers(ErrShutdown)
	grace.Reset(w.opts.ShutdownGrace)
	select {
	case <-done:
		return
	case <-grace.C:
	}
	w.mu.Lock()
	var stuck []*run
	for _, r := range w.active {
		if r.settling.CompareAndSwap(false, true) {
			stuck = append(stuck, r)
		}
	}
	w.mu.Unlock()
	for _, r := range stuck {
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		err := w.q.Release(ctx, r.job.Lease())
		cancel()
		w.opts.Logger.Warn("lite: handler ignored shutdown; its lease is released and its outcome will be skipped",
			"job_id", r.job.ID, "generation", r.job.Generation, "err", err)
	}
}
