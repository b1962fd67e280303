package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
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
	written bool  // its outcome is written in a round (see lane.written); guarded by Worker.mu
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
	return w.startIn(handlerCtx, l, j, nil)
}

// startIn is start in the slot of from, a run of l whose outcome has
// committed (nil: in a free slot): the slot passes from one run to the
// next under one lock, so that the loop never counts it free between
// them and leases for it too.
func (w *Worker) startIn(handlerCtx context.Context, l *lane, j *Job, from *run) *run {
	r := &run{job: j, lane: l}
	r.ctx, r.cancel = context.WithCancelCause(handlerCtx)
	w.mu.Lock()
	if from != nil {
		w.vacate(from)
	}
	old := w.newest[j.ID]
	w.active[r.key()] = r
	l.busy++
	w.newest[j.ID] = r
	w.mu.Unlock()
	if old != nil && !old.settling.Load() {
		w.opts.Logger.Warn("lite: lease lost: the job was leased again; stopping its old handler",
			"job_id", j.ID, "kind", j.Kind, "lease_generation", old.job.Generation, "current_generation", j.Generation)
		old.cancel(&LeaseLostError{JobID: j.ID, Generation: old.job.Generation,
			CurrentGeneration: j.Generation, State: StateRunning, Why: WhySuperseded})
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
	d := newDurable(w.q, r.job.Lease(), r.cancel)
	d.emit, d.job = w.emit, r.job
	ctx = withDurable(ctx, d)
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
		err := retryBusy(ctx, func() error { return w.q.release(ctx, j.Lease()) })
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

// Handler runs one job. Its context ends when the lease is lost (the cause
// is ErrLeaseLost), when its timeout passes, or when the worker shuts down
// (the cause is ErrShutdown). A nil error acks the job done, with the
// result given to SetResult and the writes given to CommitWithAck; an
// error fails the attempt, with the writes given to CommitWithFailure.
// Wrap the error with Permanent to bury the job at once, or return
// Snooze(d), wrapped or not, to run it again later without spending an
// attempt.
//
// Shutdown wins over a returned error: once the handler's context ended
// with ErrShutdown, an error it returns (a Snooze too) releases the job
// rather than failing it, spending no attempt and running no failure
// writes, since the error most likely says only that it was stopped. A
// nil error still acks the job done.
type Handler func(ctx context.Context, job *Job) error

// ErrShutdown is the cause of a handler's context when its worker stopped
// before the handler finished. The job is released, not failed, whatever
// error the handler then returns. A handler that stops on its own schedule
// at shutdown (as `lite work` does with its commands) gives its job back
// the same way by returning an error that wraps ErrShutdown.
var ErrShutdown = errors.New("worker shut down")

// errTimeout is the cause of a handler's context when its timeout passed.
var errTimeout = errors.New("handler timed out")

// outcomeKey holds the *success a handler fills in for its ack.
type outcomeKey struct{}

// success is what a handler asks the write that settles its run to carry:
// a result and CommitWithAck writes if it succeeds, CommitWithFailure
// writes if it fails. A handler may call SetResult, CommitWithAck and
// CommitWithFailure from any goroutine while it runs.
type success struct {
	mu         sync.Mutex
	result     []byte
	resultSets int // how many times SetResult was called
	writes     []func(tx *sql.Tx) error
	failWrites []func(tx *sql.Tx, f Failure) error
	writing    atomic.Bool // its writes are running, in the settling transaction
}

// settlement is a success as the handler left it when it returned.
type settlement struct {
	result     []byte
	writes     []func(tx *sql.Tx) error
	failWrites []func(tx *sql.Tx, f Failure) error
	writing    *atomic.Bool
	from       *success // for a result set while the writes run
	resultSets int      // from's when the handler returned
}

func (s *success) snapshot() settlement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return settlement{result: s.result, writes: slices.Clone(s.writes),
		failWrites: slices.Clone(s.failWrites), writing: &s.writing, from: s, resultSets: s.resultSets}
}

// errWriteInsideAck refuses a queue call that writes, made inside a
// handler's CommitWithAck or CommitWithFailure writes: it would wait for
// the queue's writer, which the settling transaction holds until the
// writes return.
var errWriteInsideAck = errors.New("a queue call that writes, inside CommitWithAck's or CommitWithFailure's writes, would wait forever for the writer the ack's transaction holds: write through the *sql.Tx given (EnqueueTx for a job)")

// insideAckWrites reports whether ctx is a handler's whose CommitWithAck
// or CommitWithFailure writes are running now.
func insideAckWrites(ctx context.Context) bool {
	s, ok := ctx.Value(outcomeKey{}).(*success)
	return ok && s.writing.Load()
}

// ackWrites runs a handler's CommitWithAck writes in order, in the ack's
// transaction, and then stores the result they gave SetResult, if they
// gave one: the ack stored the result as the handler left it when it
// returned, before its writes ran.
func (d settlement) ackWrites(ctx context.Context, q *Queue, l Lease) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		d.writing.Store(true)
		defer d.writing.Store(false)
		for _, write := range d.writes {
			if err := recovered(func() error { return write(tx) }); err != nil {
				return err
			}
		}
		d.from.mu.Lock()
		result, late := d.from.result, d.from.resultSets != d.resultSets
		d.from.mu.Unlock()
		if !late {
			return nil
		}
		return q.storeLateResult(ctx, tx, l, result)
	}
}

// lateResultSQL matches the id alone: the done-ack that ran before it in
// the same transaction matched the lease.
var lateResultSQL = stmt{
	sqlite:   `update lite_jobs set result = ? where id = ?`,
	postgres: `update lite_jobs set result = $1 where id = $2`,
}

func (q *Queue) storeLateResult(ctx context.Context, tx *sql.Tx, l Lease, result []byte) error {
	if err := q.checkResult(l, result); err != nil {
		return err
	}
	if len(result) == 0 {
		result = nil // an empty result is no result, stored as null
	}
	if _, err := tx.ExecContext(ctx, q.sql(lateResultSQL), result, l.JobID); err != nil {
		return fmt.Errorf("store the result: %w", err)
	}
	return nil
}

// recovered runs handler code (the handler, or the writes it gave
// CommitWithAck or CommitWithFailure) and turns its panic into an error
// carrying the stack: the attempt fails, and the worker and the other jobs
// it runs go on.
func recovered(write func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError{value: v, stack: debug.Stack()}
		}
	}()
	return write()
}

// failureWrites is a handler's CommitWithFailure writes as one function,
// which runs them in order in the transaction that records the failure;
// nil when there are none.
func (d settlement) failureWrites() func(tx *sql.Tx, f Failure) error {
	if len(d.failWrites) == 0 {
		return nil
	}
	return func(tx *sql.Tx, f Failure) error {
		d.writing.Store(true)
		defer d.writing.Store(false)
		for _, write := range d.failWrites {
			if err := recovered(func() error { return write(tx, f) }); err != nil {
				return err
			}
		}
		return nil
	}
}

// SetResult records result as the job's result when the handler returns
// nil. It combines with CommitWithAck: the result lands in the same
// transaction as the writes, or neither does, and the writes may call it
// too (with the handler's context), to store what they computed; the
// last call wins. It does nothing outside a handler.
func SetResult(ctx context.Context, result []byte) {
	if s, ok := ctx.Value(outcomeKey{}).(*success); ok {
		s.mu.Lock()
		s.result = result
		s.resultSets++
		s.mu.Unlock()
	}
}

// CommitWithAck makes writes run in the transaction that acks the job
// done, once the handler returns nil: the handler's rows in the queue's
// file commit if and only if its lease is still current (see
// Queue.Complete). A handler may call it more than once: every writes runs,
// in the order given, in the one transaction. If any fails, nothing
// commits and the attempt fails with its error (and CommitWithFailure's
// writes run). It combines with SetResult: the result is stored in the
// same commit. It does nothing outside a handler.
//
// writes must write through the *sql.Tx it is given. The transaction holds
// the file's write lock, so a write through Queue.DB() or another
// connection inside writes waits for it until the busy timeout; the
// attempt then fails with an error that says so. A queue call that writes
// (Enqueue rather than EnqueueTx) made with the handler's context fails
// at once; with another context it would wait forever.
func CommitWithAck(ctx context.Context, writes func(tx *sql.Tx) error) {
	if s, ok := ctx.Value(outcomeKey{}).(*success); ok {
		s.mu.Lock()
		s.writes = append(s.writes, writes)
		s.mu.Unlock()
	}
}

// CommitWithFailure makes writes run in the transaction that records a
// failed attempt, once the guard matched: the handler's "failed" or
// "gone" status in the queue's file commits if and only if the failure
// does, so it is never best-effort and never written by a worker that
// lost the lease. writes is given the failure as recorded: its error, the
// attempt, whether the job retries (State available, at NextRunAt) or is
// dead, and why.
//
// The writes run for an attempt that fails: an error returned (Permanent
// or not), a panic, a timeout, or a done-ack refused for what the handler
// gave it (its CommitWithAck writes failing, a result too large). They do
// not run for a snooze, a release at shutdown (which wins over a returned
// error), or a lost lease. A handler may call it more than once: every
// writes runs, in the order given, in the one transaction.
//
// If any fails, none of them commits, and the failure is recorded without
// them: its recorded error joins the attempt's error with the writes', the
// worker logs it at Error level, and the EventFailed says
// WhyFailureWritesFailed. writes must write through the *sql.Tx it is
// given, as CommitWithAck's. It does nothing outside a handler.
func CommitWithFailure(ctx context.Context, writes func(tx *sql.Tx, f Failure) error) {
	if s, ok := ctx.Value(outcomeKey{}).(*success); ok {
		s.mu.Lock()
		s.failWrites = append(s.failWrites, writes)
		s.mu.Unlock()
	}
}

// SnoozeError is the error Snooze returns: a handler that returns it,
// wrapped or not, has its job run again after Delay without spending an
// attempt. Test for it with errors.As.
type SnoozeError struct {
	Delay time.Duration
}

func (s *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", s.Delay) }

// Snooze is an error a handler returns to run the job again after d,
// without spending an attempt. It still snoozes when wrapped
// (fmt.Errorf("waiting for the bank: %w", lite.Snooze(time.Minute))).
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// panicError is a handler's panic, turned into a failed attempt.
type panicError struct {
	value any
	stack []byte
}

func (p panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", p.value, p.stack) }

// call runs h and turns a panic into an error carrying the stack.
func call(ctx context.Context, h Handler, job *Job) error {
	return recovered(func() error { return h(ctx, job) })
}
