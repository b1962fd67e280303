package lite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// InsertBatch checks and inserts jobs on tx as a batch's transaction does,
// with ctx as its caller's: for tests of what a context that ends inside
// the batch makes of its error.
func InsertBatch(ctx context.Context, q *Queue, tx *sql.Tx, jobs []NewJob) ([]Enqueued, error) {
	rows, err := q.validateBatch(jobs)
	if err != nil {
		return nil, err
	}
	return q.insertBatch(ctx, tx, rows)
}

// SetIdleHook lets tests know when a worker's loop has leased what it
// could and decided how to wait, just before it waits.
func SetIdleHook(w *Worker, hook func()) { w.idleHook = hook }

// SetAfter replaces the timer a worker waits on after a failed lease.
func SetAfter(w *Worker, after func(time.Duration) <-chan time.Time) { w.after = after }

// SetAfterBatch calls f after each delete batch of Clean and Purge.
func SetAfterBatch(q *Queue, f func()) { q.afterBatch = f }

// PollOnly makes a worker find other processes' commits by polling alone,
// as it does where the WAL cannot be watched.
func PollOnly(w *Worker) { w.noWAL = true }

// WriterDB is the queue's own writer connection, for tests that set a
// pragma on it (pragmas belong to one connection).
func WriterDB(q *Queue) *sql.DB { return q.w }

// Announce writes a worker's row as a running worker would, without one.
func Announce(ctx context.Context, q *Queue, identity string, queues, kinds []string, staleAfter time.Duration) error {
	return q.newAnnouncement(identity, queues, kinds, 0, staleAfter).announce(ctx)
}

// WarnUnhandled runs one of a running worker's checks for unhandled jobs.
func WarnUnhandled(ctx context.Context, w *Worker, warned map[[2]string]time.Time) {
	w.warnUnhandled(ctx, warned)
}

// FreeSlots is how many slots of each of w's queues are free ("" for the
// slots every queue shares).
func FreeSlots(w *Worker) map[string]int {
	w.mu.Lock()
	defer w.mu.Unlock()
	free := map[string]int{}
	for _, l := range w.lanes {
		free[strings.Join(l.queues, ",")] = l.free()
	}
	return free
}

// SideBySide counts the engine halves of tests running side by side now
// (forEachEngine in lite_test): a knob of the whole process set while one
// runs would act on the other half's calls too, so each knob refuses.
var SideBySide atomic.Int32

// knobOfTheProcess panics when a test that sets a knob of the whole
// process runs beside another half.
func knobOfTheProcess(name string) {
	if SideBySide.Load() > 0 {
		panic(name + " sets a knob of the whole process: run the test's engines with forEachEngineInTurn")
	}
}

// SetHostClock makes server queues opened from now on read this host's
// clock from f; the returned func restores it.
func SetHostClock(f func() time.Time) (restore func()) {
	knobOfTheProcess("SetHostClock")
	old := hostNow
	hostNow = f
	return func() { hostNow = old }
}

// ServerClock is a server queue's clock, read again by hand.
type ServerClock struct{ c *serverClock }

// NewServerClock reads the server's clock on db as a server queue's Open
// does.
func NewServerClock(ctx context.Context, db *sql.DB) (ServerClock, error) {
	c, err := newServerClock(ctx, db)
	return ServerClock{c}, err
}

// Sync reads the server's clock again.
func (c ServerClock) Sync(ctx context.Context) error { return c.c.sync(ctx) }

// Now is the server's time as the clock reckons it.
func (c ServerClock) Now() time.Time { return c.c.now() }

// FireAfter fires the schedules that are due as a worker would, but runs
// between after reading them and before firing: another process's write
// that lands in that window.
func FireAfter(ctx context.Context, q *Queue, between func()) (int, error) {
	due, err := q.dueSchedules(ctx, q.opts.Now())
	if err != nil {
		return 0, err
	}
	between()
	n, _, err := q.fireDue(ctx, due)
	return n, err
}

// NoHardLinks makes Open create new files as it does on a file system
// without hard links, until the test ends. Tests using it must not run in
// parallel.
func NoHardLinks(t interface{ Cleanup(func()) }) {
	knobOfTheProcess("NoHardLinks")
	linkFile = func(string, string) error { return errors.ErrUnsupported }
	t.Cleanup(func() { linkFile = os.Link })
}

// FreezeAfterFlowLock runs freeze in every PostgreSQL lease of a limited
// queue once its rows are locked and in every change of settings once it
// holds lite_queues, and FreezeAfterFireLock in every fire
// once its schedule's row is held, until the test ends: a host frozen
// inside the transaction. Tests using them must not run in parallel.
func FreezeAfterFlowLock(t interface{ Cleanup(func()) }, freeze func()) {
	knobOfTheProcess("FreezeAfterFlowLock")
	afterFlowLock = freeze
	t.Cleanup(func() { afterFlowLock = nil })
}

func FreezeAfterFireLock(t interface{ Cleanup(func()) }, freeze func()) {
	knobOfTheProcess("FreezeAfterFireLock")
	afterFireLock = freeze
	t.Cleanup(func() { afterFireLock = nil })
}

// FreezeAfterDepsLock runs freeze in every enqueue that waits for jobs
// once it holds their rows, until the test ends.
func FreezeAfterDepsLock(t interface{ Cleanup(func()) }, freeze func()) {
	knobOfTheProcess("FreezeAfterDepsLock")
	afterDepsLock = freeze
	t.Cleanup(func() { afterDepsLock = nil })
}

// SetWaitPolls sets how often waiters look on their own, with a watch of
// commits and without one; the returned func restores them. Tests using
// it must not run in parallel.
func SetWaitPolls(watched, unwatched time.Duration) (restore func()) {
	knobOfTheProcess("SetWaitPolls")
	oldWatched, oldUnwatched := waitSafetyPoll, waitPoll
	waitSafetyPoll, waitPoll = watched, unwatched
	return func() { waitSafetyPoll, waitPoll = oldWatched, oldUnwatched }
}

// NoWaitSettle makes waiters look again only when woken or at their
// polls, never to settle after a wake-up; the returned func restores it.
// Tests using it must not run in parallel.
func NoWaitSettle() (restore func()) {
	knobOfTheProcess("NoWaitSettle")
	old := waitSettle
	waitSettle = 0
	return func() { waitSettle = old }
}

// WaitReports counts the commits the waiters' shared watch relayed: on a
// server, the first is its listener coming up.
func WaitReports(q *Queue) int64 { return q.waiters.reports.Load() }

// AckAndLease runs a worker's round on PostgreSQL (see ackAndLease): acks
// and a lease in one statement.
func AckAndLease(ctx context.Context, q *Queue, acks []Done, req LeaseRequest) ([]error, []*Job, error) {
	return q.ackAndLease(ctx, acks, req)
}

// HoldRounds makes q's writer run a round that waits, and returns once it
// runs: writes handed in meanwhile gather for the next round. waiting says
// how many are waiting; release lets the held round commit.
func HoldRounds(q *Queue) (waiting func() int, release func()) {
	running, hold := make(chan struct{}), make(chan struct{})
	go q.rounds.do(&roundItem{ctx: context.Background(), fn: func(conn) error {
		close(running)
		<-hold
		return nil
	}})
	<-running
	return func() int { return len(q.rounds.reqs) }, func() { close(hold) }
}

// QueuedAcks is how many done-acks wait for w's next group commit.
func QueuedAcks(w *Worker) int {
	if c := w.acks.Load(); c != nil {
		return len(c.reqs)
	}
	return 0
}

// AfterCommitsJoined is how many callers wait for q's next call of
// Options.AfterCommit, which starts once the one under way returns.
func AfterCommitsJoined(q *Queue) int {
	q.commitWaits.mu.Lock()
	defer q.commitWaits.mu.Unlock()
	if q.commitWaits.next == nil {
		return 0
	}
	return q.commitWaits.next.joined
}

// IsPrepared says whether the queue's statement cache holds the text the
// statement declared as name has on q's engine.
func IsPrepared(q *Queue, name string) bool {
	s, ok := statements[name].(stmt)
	return ok && q.stmts.lookup(q.sql(s)) != nil
}

// HandlerContext is the context a handler of lease l gets for Step,
// Sleep and AwaitSignal, for a test that calls them with a stale lease;
// lost is called when one finds the lease lost.
func HandlerContext(ctx context.Context, q *Queue, l Lease, lost context.CancelCauseFunc) context.Context {
	return withDurable(ctx, newDurable(q, l, lost))
}

// Park parks lease l's job as a handler returning p does.
func Park(ctx context.Context, q *Queue, l Lease, p *ParkError) error {
	_, err := q.park(ctx, l, p)
	return err
}

// WorkerRow is a worker's row in lite_workers kept by hand, as Run keeps
// its own: the liveness of the leases taken under it.
type WorkerRow struct{ a *announcement }

// AnnounceWorker writes a worker's row, promising staleAfter, as Run does.
func AnnounceWorker(ctx context.Context, q *Queue, staleAfter time.Duration) (*WorkerRow, error) {
	a := q.newAnnouncement("by hand", nil, nil, 1, staleAfter)
	return &WorkerRow{a}, a.announce(ctx)
}

// Seen renews the row, as Run's worker does every heartbeat.
func (r *WorkerRow) Seen(ctx context.Context) error { return r.a.seen(ctx) }

// Lease leases as Run's worker does, its jobs naming the row.
func (r *WorkerRow) Lease(ctx context.Context, req LeaseRequest) ([]*Job, error) {
	req.worker = r.a.id
	return r.a.q.Lease(ctx, req)
}

// ReclaimAs reclaims as the worker of row does, holding no lease.
func ReclaimAs(ctx context.Context, q *Queue, row *WorkerRow) ([]Reclaimed, error) {
	return q.reclaim(ctx, nil, row.a.id)
}
