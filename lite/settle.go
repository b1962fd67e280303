package lite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ackTimeout bounds the write that settles a run, which runs even after
// the handler's context ended so that no job is left stuck.
const ackTimeout = 30 * time.Second

// settle writes the run's outcome under its lease. A lost lease is
// warn-and-skip: nothing is written, and a warning names both generations
// and why the lease was lost.
func (w *Worker) settle(r *run, err error, out settlement, elapsed time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), ackTimeout)
	defer cancel()
	ctx = context.WithValue(ctx, writtenKey{}, func() { w.written(r) })
	l := r.job.Lease()
	ev := Event{JobID: r.job.ID, Job: r.job, Generation: l.Generation, Elapsed: elapsed}
	var snooze *SnoozeError
	var park *ParkError
	var writeErr error
	waited := false // the write's own commit waited for Options.AfterCommit
	if errors.As(err, &park) {
		if bad := park.invalid(r.job.ID); bad != nil {
			err, park = bad, nil // the attempt fails as the handler's error
		}
	}
	switch {
	case err == nil:
		ev.Kind, ev.State = EventDone, StateDone
		writeErr = retryBusy(ctx, func() (err error) {
			waited, err = w.ackDone(ctx, l, out)
			return err
		})
		if refusedForHandlerOutput(writeErr, out) {
			waited = false // the failure is a write of its own
			cause := writeErr
			if errors.Is(cause, ErrTooLarge) {
				cause = Permanent(cause) // the same result would be refused again
			}
			writeErr = w.fail(ctx, l, cause, out, &ev)
		}
	case errors.Is(context.Cause(r.ctx), ErrShutdown) || errors.Is(err, ErrShutdown):
		ev.Kind, ev.State, ev.NextRunAt = EventReleased, StateAvailable, w.q.opts.Now()
		writeErr = retryBusy(ctx, func() error { return w.q.release(ctx, l) })
	case errors.As(err, &snooze):
		ev.Kind, ev.State = EventSnoozed, StateAvailable
		writeErr = retryBusy(ctx, func() (err error) {
			ev.NextRunAt, err = w.q.snooze(ctx, l, snooze.Delay)
			return err
		})
	case errors.As(err, &park):
		ev.Kind, ev.State, ev.Why = EventParked, StateAvailable, Why(park.Reason)
		writeErr = retryBusy(ctx, func() (err error) {
			ev.NextRunAt, err = w.q.park(ctx, l, park)
			return err
		})
		if writeErr == nil && ev.NextRunAt.IsZero() {
			ev.State = StateBlocked // until the jobs it awaits have ended
		}
	default:
		writeErr = w.fail(ctx, l, err, out, &ev)
	}
	if writeErr == nil && !waited {
		writeErr = w.q.AfterCommit(ctx)
	}
	switch {
	case errors.Is(writeErr, ErrAfterCommit):
		// Written here: the event stands, and a replica may lack it.
		w.opts.Logger.Error("lite: a job's outcome committed, but the wait after its commit failed",
			"job_id", r.job.ID, "outcome", ev.Kind, "err", writeErr)
	case errors.Is(writeErr, ErrLeaseLost):
		var lost *LeaseLostError
		if !errors.As(writeErr, &lost) || lost.Why == "" {
			lost = w.q.lossOf(ctx, l) // the group commit's acks do not say why
		}
		ev = Event{Kind: EventLeaseLost, JobID: r.job.ID, Job: r.job, Generation: l.Generation,
			CurrentGeneration: lost.CurrentGeneration, State: lost.State, Why: lost.Why, Err: lost, Elapsed: elapsed}
		w.opts.Logger.Warn("lite: stale ack skipped: the lease was lost",
			"job_id", r.job.ID, "kind", r.job.Kind, "lease_generation", l.Generation,
			"current_generation", ev.CurrentGeneration, "why", ev.Why, "state", ev.State)
	case writeErr != nil:
		// The lease stays ours until its heartbeat lapses; then a reclaim
		// runs the job again.
		w.opts.Logger.Error("lite: writing a job's outcome failed; it will be reclaimed",
			"job_id", r.job.ID, "outcome", ev.Kind, "err", writeErr)
		ev.Kind, ev.State, ev.NextRunAt, ev.Why, ev.Err = EventFailed, StateRunning, time.Time{}, WhyUnrecorded, writeErr
	case ev.Why == WhyFailureWritesFailed:
		w.opts.Logger.Error("lite: job attempt failed, and its failure writes failed: recorded without them",
			"job_id", r.job.ID, "kind", r.job.Kind, "attempt", l.Attempt, "max_attempts", r.job.MaxAttempts,
			"generation", l.Generation, "state", ev.State, "err", ev.Err)
	case ev.Kind == EventFailed:
		// A job that fails each time must not burn its attempts in silence.
		w.opts.Logger.Warn("lite: job attempt failed",
			"job_id", r.job.ID, "kind", r.job.Kind, "attempt", l.Attempt, "max_attempts", r.job.MaxAttempts,
			"generation", l.Generation, "why", ev.Why, "err", ev.Err)
	}
	r.outcome = ev.Kind
	r.ended = ev
	w.emit(ev)
}

// fail records the run's failure with the handler's CommitWithFailure
// writes, and fills ev in with it.
func (w *Worker) fail(ctx context.Context, l Lease, cause error, out settlement, ev *Event) error {
	ev.Kind, ev.Err = EventFailed, cause
	return retryBusy(ctx, func() error {
		f, err := w.q.fail(ctx, l, cause, out.failureWrites())
		if err == nil {
			ev.State, ev.NextRunAt, ev.Why, ev.Err = f.State, f.NextRunAt, f.Why, f.Err
		}
		return err
	})
}

// refusedForHandlerOutput reports whether a done-ack was refused for what
// the handler itself gave it, its CommitWithAck writes failing or a result
// too large to store, rather than for the lease or the lock. The attempt
// then fails instead.
func refusedForHandlerOutput(ackErr error, out settlement) bool {
	if isWritesError(ackErr) {
		return true
	}
	if ackErr == nil || errors.Is(ackErr, ErrLeaseLost) || errors.Is(ackErr, ErrBusy) {
		return false
	}
	return len(out.writes) > 0 || errors.Is(ackErr, ErrTooLarge)
}

// ackDone writes a done-ack; waited says the group commit that wrote it
// also waited for Options.AfterCommit.
func (w *Worker) ackDone(ctx context.Context, l Lease, out settlement) (waited bool, err error) {
	if len(out.writes) > 0 {
		return false, w.q.complete(ctx, l, out.result, out.ackWrites(ctx, w.q, l))
	}
	if c := w.acks.Load(); c != nil {
		if err := c.ack(l, out.result); !errors.Is(err, errCompleterStopped) {
			return true, err
		}
	}
	return false, w.q.markDone(ctx, l, out.result)
}

// startAcks starts group commit for the worker's run on a server; the
// returned stop writes what is queued and ends it. A file needs none: its
// writer's rounds group every write (see rounds).
func (w *Worker) startAcks() (stop func()) {
	if !w.q.engine.onServer() {
		return func() {}
	}
	c := w.q.startCompleter()
	w.acks.Store(c)
	return func() {
		w.acks.Store(nil)
		c.stop()
	}
}

// retryBusy runs write until it is neither refused as busy nor cut off
// from its server. Busy waits 25ms, 50ms, ... up to about three seconds
// in all: another process's write lock (or its recovery after a crash)
// passes, and a settled outcome is worth the wait. An unreachable server
// (restarting, a connection killed) is tried again every 1.6 s at most
// until ctx ends (the ack's 30 s), so that an outcome is not lost to an
// outage shorter than that and the job run a second time. Any other
// error returns at once.
func retryBusy(ctx context.Context, write func() error) error {
	err := write()
	var waited time.Duration
	for wait := 25 * time.Millisecond; ; wait = min(2*wait, 1600*time.Millisecond) {
		if errors.Is(err, ErrAfterCommit) {
			return err // committed: written again, it would find its lease gone
		}
		busy := errors.Is(err, ErrBusy) && waited < 3*time.Second
		if !busy && !unreachable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		waited += wait
		err = write()
	}
}

// maxGroup caps how many acks one group commit holds.
const maxGroup = 512

// ackRequest is one done-ack waiting for a group commit.
type ackRequest struct {
	done  Done
	reply chan error
}

// completer group-commits done-acks: it writes every ack already waiting
// in one transaction, so that under load a commit (and, with SyncFull, an
// fsync) serves many jobs, and an idle worker's ack waits for nothing.
type completer struct {
	q      *Queue
	reqs   chan ackRequest
	done   chan struct{}
	refill atomic.Pointer[refill] // leases in the acks' statement, when set and armed (see ackAndLease)

	mu     sync.RWMutex // held shared by acks in flight, exclusively by stop
	closed bool
}

// errCompleterStopped sends an ack the direct way: its worker stopped, as
// it does before a handler that ignored shutdown returns.
var errCompleterStopped = errors.New("completer stopped")

func (q *Queue) startCompleter() *completer {
	c := &completer{q: q, reqs: make(chan ackRequest, maxGroup), done: make(chan struct{})}
	go c.run()
	return c
}

// ack queues a done-ack and waits until its transaction committed.
func (c *completer) ack(l Lease, result []byte) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errCompleterStopped
	}
	reply := make(chan error, 1)
	c.reqs <- ackRequest{done: Done{Lease: l, Result: result}, reply: reply}
	return <-reply
}

// stop ends the completer once every queued ack is written; later acks
// get errCompleterStopped.
func (c *completer) stop() {
	c.mu.Lock()
	c.closed = true
	close(c.reqs)
	c.mu.Unlock()
	<-c.done
}

func (c *completer) run() {
	defer close(c.done)
	for first := range c.reqs {
		group := []ackRequest{first}
	gather:
		for len(group) < maxGroup {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		c.commit(group)
	}
}

// write commits acks: with a round's lease, if the worker has one armed.
func (c *completer) write(ctx context.Context, acks []Done) ([]error, error) {
	if r := c.refill.Load(); r != nil && r.armed.Load() {
		if results, ok, err := r.round(ctx, acks); ok {
			return results, err
		}
	}
	return c.q.ackDoneMany(ctx, acks)
}

func (c *completer) commit(group []ackRequest) {
	acks := make([]Done, len(group))
	for i, r := range group {
		acks[i] = r.done
	}
	// Acks run after their handlers ended, whatever the worker's context.
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	results, err := c.write(ctx, acks)
	var waited error
	if err == nil {
		waited = c.q.AfterCommit(ctx) // once per group commit, not per ack
	}
	for i, r := range group {
		switch {
		case err != nil:
			r.reply <- err
		case results[i] != nil:
			r.reply <- fmt.Errorf("ack done: %w", results[i])
		default:
			r.reply <- waited
		}
	}
}

// writtenKey holds, in a settling run's context, what its write calls once
// its statements matched in its round, before the round commits.
type writtenKey struct{}

// written counts r's slot as free for a lease in the round that wrote its
// outcome (see lane.written), and wakes the loop to lease for it.
func (w *Worker) written(r *run) {
	w.mu.Lock()
	if !r.vacated && !r.written {
		r.written = true
		r.lane.written++
	}
	w.mu.Unlock()
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// maxRound caps how many writes one round holds.
const maxRound = 512

// roundItem is one write waiting for a round of the writer (see rounds).
type roundItem struct {
	ctx context.Context // its caller's: one that gave up is not run
	fn  func(c conn) error
	// ack is set for a plain done-ack, one that carries a result and no
	// writes of the caller's: fn is its one statement, which the round
	// may run as one entry of a statement for many (see ackRound).
	ack *Done
	// step is set for a step's record (see recordStep): the round may
	// write it as one entry of a statement for many (see stepRound).
	step     *stepWrite
	alone    bool   // an ack or step its round's statement for many failed: it runs fn
	written  func() // once fn matched, before the round commits (see writtenKey)
	unsynced bool   // a lease: its commit need not sync (see leaseWithoutSync)
	asked    int64  // ms: when it was handed in, for noteWait
	err      error
	done     chan struct{}
}

// rounds is a SQLite queue's writer: each round takes every write waiting
// (acks, failures, snoozes, releases, renewals, enqueues, leases) into one
// BEGIN IMMEDIATE and one commit, so that under load a commit (and, with
// SyncFull, an fsync) serves many writes, and a write that arrives while a
// round runs joins the next one rather than wait for the lock on its own.
// Each write keeps its own statements and its own result: in a round of
// more than one, each runs in a savepoint, so a write that fails (a lost
// lease, a caller's failing CommitWithAck writes) leaves nothing and fails
// no other; but plain done-acks side by side run as one statement, each
// fenced on its own row, with no savepoint (see ackRound).
type rounds struct {
	q    *Queue
	reqs chan *roundItem
	done chan struct{}

	start  sync.Once
	mu     sync.RWMutex // held shared by writes in flight, exclusively by stop
	closed bool
}

func newRounds(q *Queue) *rounds {
	return &rounds{q: q, reqs: make(chan *roundItem, maxRound), done: make(chan struct{})}
}

// errRoundsStopped sends a write the direct way: the queue is closing.
var errRoundsStopped = errors.New("rounds stopped")

// do runs it in the next round and returns its own result; its
// statements run with its ctx.
func (r *rounds) do(it *roundItem) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return errRoundsStopped
	}
	r.start.Do(func() { go r.run() })
	it.asked, it.done = r.q.nowMillis(), make(chan struct{})
	r.reqs <- it
	<-it.done
	return it.err
}

// stop ends the rounds once every write handed in is done; later writes
// get errRoundsStopped.
func (r *rounds) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	close(r.reqs)
	started := true
	r.start.Do(func() { started = false })
	if started {
		<-r.done
	}
}

func (r *rounds) run() {
	defer close(r.done)
	for _, s := range []stmt{savepointSQL, releaseSPSQL, rollbackSPSQL, ackDoneManySQL} {
		// Unprepared, a statement still runs: it is parsed each time.
		_, _ = r.q.stmts.prepare(context.Background(), r.q.sql(s))
	}
	for first := range r.reqs {
		items := []*roundItem{first}
	gather:
		for len(items) < maxRound {
			select {
			case it, ok := <-r.reqs:
				if !ok {
					break gather
				}
				items = append(items, it)
			default:
				break gather
			}
		}
		// Leases go last, so that they take the slots the round's acks
		// freed.
		slices.SortStableFunc(items, func(a, b *roundItem) int { return cmp.Compare(b2i(a.unsynced), b2i(b.unsynced)) })
		for len(items) > 0 {
			items = r.q.round(items)
		}
	}
}

// roundConn is a round's transaction with the time it read once its lock
// was held: every write of the round stores that time (see nowOn).
type roundConn struct {
	txConn
	now time.Time
}

// nowOn is the time a write on c stores: its round's, read once the lock
// was held, or else the clock's now.
func (q *Queue) nowOn(c queryer) time.Time {
	if rc, ok := c.(roundConn); ok {
		return rc.now
	}
	return q.opts.Now()
}

// Savepoints of a round's writes. Prepared, as every statement of the
// round: the round holds the writer, which preparing would wait for.
var (
	savepointSQL  = stmt{sqlite: `savepoint lite_write`}
	releaseSPSQL  = stmt{sqlite: `release lite_write`}
	rollbackSPSQL = stmt{sqlite: `rollback to lite_write`}
)

// round runs items in one transaction, each with its own result, and
// finishes them. A write that ends the transaction itself (a statement
// interrupted by its caller's cancel, a full disk) fails with its own
// error, and the writes of the round that had none are handed back to run
// in a round of their own.
func (q *Queue) round(items []*roundItem) (again []*roundItem) {
	ctx := context.Background()
	asked := items[0].asked
	unsynced := q.leaseWithoutSync()
	for _, it := range items {
		asked = min(asked, it.asked)
		unsynced = unsynced && it.unsynced
	}
	err := q.roundTx(ctx, unsynced, func(tx txConn) error {
		q.noteWait(asked, q.nowMillis())
		c := roundConn{tx, q.opts.Now()}
		if len(items) == 1 {
			items[0].err = items[0].run(c)
			return items[0].err
		}
		for i := 0; i < len(items); {
			n, many := plainAcks(items[i:]), q.ackRound
			if n == 0 {
				// A step alone is one statement as it is.
				if n, many = stepRecords(items[i:]), q.stepRound; n == 1 {
					n = 0
				}
			}
			if n > 0 {
				if err := many(ctx, c, items[i:i+n]); err != nil {
					// The statement failed whole, for a reason of one
					// write's or of the transaction's: every write runs
					// again, these each with its own statement.
					for _, it := range items[i : i+n] {
						it.alone = true
					}
					again, items = retried(items), nil
					return err
				}
				i += n
				continue
			}
			it := items[i]
			if err := q.savepointed(ctx, tx, func() error { return it.run(c) }, &it.err); err != nil {
				again = retried(append(slices.Clip(items[:i]), items[i+1:]...))
				items = items[i : i+1]
				return err
			}
			i++
		}
		return nil
	})
	// The round's whole time is kept as a wait, whether it failed for
	// want of the lock or held it: either way, other processes' beats
	// waited as long (see noteWait).
	q.noteWait(asked, q.nowMillis())
	for _, it := range items {
		if it.err == nil {
			it.err = err
		}
		close(it.done)
	}
	return again
}

// retried clears the results of writes handed back to run again.
func retried(items []*roundItem) []*roundItem {
	for _, it := range items {
		it.err = nil
	}
	return items
}

// run runs the write, unless its caller gave up waiting for its round: a
// statement cancelled as it runs would roll back the round's transaction
// (an interrupted SQLite write ends it) and make every other write run
// again.
func (it *roundItem) run(c conn) error {
	if err := it.ctx.Err(); err != nil {
		return err
	}
	err := it.fn(c)
	if err == nil {
		it.matched()
	}
	return err
}

// matched calls the write's written, if it has one.
func (it *roundItem) matched() {
	if it.written != nil {
		it.written()
	}
}

// plainAcks counts the plain done-acks at the start of items.
func plainAcks(items []*roundItem) int {
	return leading(items, func(it *roundItem) bool { return it.ack != nil })
}

// stepRecords counts the steps' records at the start of items.
func stepRecords(items []*roundItem) int {
	return leading(items, func(it *roundItem) bool { return it.step != nil })
}

// leading counts the items at the start of items that are of a kind, and
// not to run alone.
func leading(items []*roundItem, of func(*roundItem) bool) int {
	n := 0
	for n < len(items) && of(items[n]) && !items[n].alone {
		n++
	}
	return n
}

// ackRound writes a round's plain done-acks in one statement, as
// AckDoneMany does: each fenced on its own (id, generation,
// state='running') and answered from the pairs the statement returns, a
// pair missing being a lost lease. One statement fails whole, so the acks
// need no savepoint; an error is the statement's, and no ack's result.
func (q *Queue) ackRound(ctx context.Context, c roundConn, items []*roundItem) error {
	var sent []*roundItem
	var acks []Done
	for _, it := range items {
		if it.err = it.ctx.Err(); it.err == nil {
			sent, acks = append(sent, it), append(acks, *it.ack)
		}
	}
	if len(acks) == 0 {
		return nil
	}
	results, err := q.acksOn(ctx, c, acks)
	if err != nil {
		return err
	}
	for i, it := range sent {
		if it.err = results[i]; it.err == nil {
			it.matched()
		}
	}
	return nil
}

// stepRound writes a round's steps' records in one statement (see
// recordStepsOn), each fenced on its own lease and bounded by its own
// job's records, and answered from the records the statement returns.
// A step it did not record (its lease lost, its job's bounds reached, its
// name recorded already, a second step of one job) is written alone, in
// a savepoint, which says which: a rare case.
func (q *Queue) stepRound(ctx context.Context, c roundConn, items []*roundItem) error {
	var sent, alone []*roundItem
	var steps []*stepWrite
	jobs := make(map[int64]bool, len(items))
	for _, it := range items {
		switch it.err = it.ctx.Err(); {
		case it.err != nil:
		case jobs[it.step.lease.JobID]:
			alone = append(alone, it)
		default:
			jobs[it.step.lease.JobID] = true
			sent, steps = append(sent, it), append(steps, it.step)
		}
	}
	recorded, err := q.recordStepsOn(ctx, c, steps)
	if err != nil {
		return err
	}
	for i, it := range sent {
		if recorded[i] {
			it.step.stored, it.step.inserted = it.step.result, true
			it.matched()
		} else {
			alone = append(alone, it)
		}
	}
	for _, it := range alone {
		if err := q.savepointed(ctx, c.txConn, func() error { return it.run(c) }, &it.err); err != nil {
			return err
		}
	}
	return nil
}

// savepointed runs fn in a savepoint, its error into *own, rolled back to
// on an error. It returns an error only if the transaction itself is gone.
func (q *Queue) savepointed(ctx context.Context, tx txConn, fn func() error, own *error) error {
	if _, err := tx.ExecContext(ctx, q.sql(savepointSQL)); err != nil {
		return err
	}
	if *own = fn(); *own != nil {
		if _, err := tx.ExecContext(ctx, q.sql(rollbackSPSQL)); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, q.sql(releaseSPSQL))
	return err
}

// On PostgreSQL, a worker with one lane refills the slots that a group of
// done-acks frees in the statement that commits those acks: a round is
// one round trip and one commit, where the ack, its notification and the
// next lease took three round trips and two commits, and the slots pass
// straight from the jobs acked to the jobs leased. Each ack keeps its
// guard (id, generation, state='running') and its own result, from the
// pairs the statement returns; the lease is the unlimited lease, with its
// guards, and takes nothing from a queue with limits or a pause, which
// the worker's loop then leases under the queues' lock as before.

// ackAndLeaseSQL acks a list of leases done and leases up to N jobs in
// one statement: ackDoneManySQL's text and leaseSQLs[queues][byKind][1]'s
// side by side in a WITH, both seeing the same snapshot, so that neither
// sees the other's rows (the acks' rows are running, the lease's
// available: no row is both). Its parameters are the lease's, then the
// acks' list; the acks' time is the lease's. It returns the pairs acked
// (id, generation, then nulls), and the jobs leased (two nulls, then the
// job's columns).
func ackAndLeaseSQL(queues queueFilter, byKind bool) stmt {
	lease := leaseSQL(queues, byKind, true).postgres
	update, ok := strings.CutPrefix(lease, "with "+leaseFlow.postgres+"\n")
	if !ok {
		panic("lite: the lease's text does not begin with its flow")
	}
	// The lease's fixed five, its filters, and its limit.
	list := "$" + strconv.Itoa(5+b2i(queues == oneQueue)+b2i(byKind)+2)
	nulls := strings.Repeat(", null", strings.Count(jobColumns, ",")+1)
	return stmt{postgres: `with ` + leaseFlow.postgres + `,
acked as (` + ackDoneManyPostgres("$2", list) + `),
leased as (` + update + `)
select id, generation` + nulls + ` from acked
union all
select null, null, leased.* from leased`}
}

// ackAndLeaseSQLs are ackAndLeaseSQL's texts by queue filter (a lane has
// every queue or one) and kind filter (1: by kind).
var ackAndLeaseSQLs = func() (texts [2][2]stmt) {
	for _, queues := range []queueFilter{anyQueue, oneQueue} {
		for byKind := range 2 {
			texts[queues][byKind] = ackAndLeaseSQL(queues, byKind == 1)
		}
	}
	return texts
}()

// refill is a worker's part in its group commits' rounds.
type refill struct {
	w          *Worker
	lane       *lane
	handlerCtx context.Context
	// armed says that more jobs may wait: the loop's last lease filled
	// every slot it asked for, and no round since took fewer than its
	// acks freed.
	armed atomic.Bool

	mu      sync.RWMutex // held shared by a round until its jobs started, exclusively by stop
	stopped bool
}

// startRefill has the worker's group commits lease on PostgreSQL, for a
// worker with one lane (with several, which lane a freed slot should go
// to is the loop's choice). It returns nil where they do not. stop ends
// it before the worker's shutdown, so that no round starts a job after
// the shutdown began waiting for the worker's jobs.
func (w *Worker) startRefill(handlerCtx context.Context) *refill {
	if w.q.engine != enginePostgres || len(w.lanes) != 1 {
		return nil
	}
	r := &refill{w: w, lane: w.lanes[0], handlerCtx: handlerCtx}
	if c := w.acks.Load(); c != nil {
		c.refill.Store(r)
	}
	return r
}

// arm records whether the loop's lease found a backlog; a nil refill
// ignores it.
func (r *refill) arm(backlog bool) {
	if r != nil {
		r.armed.Store(backlog)
	}
}

func (r *refill) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// round commits acks and leases a job for each slot they free, and
// starts each job in the slot of one of the runs acked. ok is false if
// the refill has stopped, and nothing was written.
func (r *refill) round(ctx context.Context, acks []Done) (results []error, ok bool, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.stopped {
		return nil, false, nil
	}
	w := r.w
	results, jobs, err := w.q.ackAndLease(ctx, acks, LeaseRequest{Queues: r.lane.queues, Kinds: w.kindList,
		Max: len(acks), LockedBy: w.opts.Identity, StaleAfter: w.opts.StaleAfter, worker: w.rowID()})
	if err != nil {
		return nil, true, err
	}
	if len(jobs) < len(acks) {
		r.armed.Store(false) // the loop leases again when a slot frees
	}
	r.startAll(acks, jobs)
	return results, true, nil
}

// ackAndLease runs a round on PostgreSQL: it acks acks done, each fenced
// on its own as AckDoneMany's are and with AckDoneMany's results, and
// leases up to req.Max jobs of req's single queue (or every queue) from
// queues without limits, in one statement.
func (q *Queue) ackAndLease(ctx context.Context, acks []Done, req LeaseRequest) (results []error, jobs []*Job, err error) {
	results, list, err := q.ackList(acks)
	if err != nil {
		return nil, nil, fmt.Errorf("ack done: %w", err)
	}
	args, err := q.leaseArgs(&req)
	if err != nil {
		return nil, nil, err
	}
	query := q.sql(ackAndLeaseSQLs[filterFor(req.Queues)][b2i(len(req.Kinds) > 0)])
	acked, jobs, err := roundRows(ctx, q.writer(), query, append(args(q.writer()), list))
	if err != nil {
		return nil, nil, fmt.Errorf("ack done: %w", classify(err))
	}
	sortLeased(jobs)
	if len(acked) > 0 {
		q.finishedSome()
	}
	return lostUnlessAcked(acks, results, acked), jobs, nil
}

// startAll starts each job leased in the slot of a run acked.
func (r *refill) startAll(acks []Done, jobs []*Job) {
	w := r.w
	for i, j := range jobs {
		l := acks[i].Lease
		w.mu.Lock()
		from := w.active[leaseKey{l.JobID, l.Generation}]
		w.mu.Unlock()
		w.startIn(r.handlerCtx, r.lane, j, from)
	}
}

// roundRows runs a round and reads the pairs it acked and the jobs it
// leased. Each row is scanned twice: first for the pair, then, if it has
// none, for the job.
func roundRows(ctx context.Context, c queryer, query string, args []any) (acked map[[2]int64]bool, jobs []*Job, err error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	acked = map[[2]int64]bool{}
	pair := make([]any, len(cols))
	var id, generation sql.NullInt64
	pair[0], pair[1] = &id, &generation
	for i := 2; i < len(pair); i++ {
		pair[i] = new(any)
	}
	for rows.Next() {
		if err := rows.Scan(pair...); err != nil {
			return nil, nil, err
		}
		if id.Valid {
			acked[[2]int64{id.Int64, generation.Int64}] = true
			continue
		}
		j, err := scanJob(skipTwo{rows})
		if err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, j)
	}
	return acked, jobs, errors.Join(rows.Err(), rows.Close())
}

// skipTwo scans a round's job row past its two pair columns.
type skipTwo struct{ rows *sql.Rows }

func (s skipTwo) Scan(dest ...any) error {
	return s.rows.Scan(append([]any{new(any), new(any)}, dest...)...)
}
