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

	goroutines sync.WaitGroup // every handler goroutine, abandoned ones too

	acks     atomic.Pointer[completer]            // group commit of done-acks while running
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
	return nil
}

// lease takes up to n jobs for lane l.
func (w *Worker) lease(ctx context.Context, l *lane, n int) ([]*Job, error) {
	return w.q.Lease(ctx, LeaseRequest{Queues: l.queues, Kinds: w.kindList, Max: n,
		LockedBy: w.opts.Identity, StaleAfter: w.opts.StaleAfter})
}

// Report is what RunOnce did.
type Report struct {
	Leased, Done, Failed, Snoozed, Released, LeaseLost int
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
	defer w.running.Store(false)
	var jobs []leased
	for _, l := range w.lanes {
		free := w.free(l)
		if free == 0 {
			continue
		}
		batch, err := w.lease(ctx, l, free)
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
// a clean stop. While it runs it also fires every due schedule (see
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

	commits, stopFiring := w.startFiring(ctx, commits, poll)
	w.loop(ctx, handlerCtx, watcher, commits, poll)
	stopFiring()
	stopReclaims()
	stopCleaning()
	w.shutdown(stopHandlers)
	stopAnnouncing()
	stopAcks()
	stopBeats()
	return nil
}

// Wait blocks until every handler this worker started has returned,
// including those Run stopped waiting for because they ignored shutdown.
// Call it after Run or RunOnce returned.
func (w *Worker) Wait() { w.goroutines.Wait() }

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
