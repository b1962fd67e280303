package lite

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// Limits caps how many jobs of a queue run and start, across every
// process that shares the queue's file or server. A zero field is no
// limit, so Limits{} lifts them all.
type Limits struct {
	// MaxRunning is how many of the queue's jobs may run at once. A slot
	// belongs to a lease: a killed worker's jobs hold theirs until they
	// are reclaimed, and then give them back once.
	MaxRunning int
	// Rate is how many of the queue's jobs may start in each period of
	// length Per; a lease counts as a start, a retry's lease included.
	// Rate and Per are given together or not at all.
	Rate int
	Per  time.Duration
	// MaxRunningPerKey is how many jobs of one key (NewJob.Key) may run
	// at once, across every process; jobs without a key are not counted.
	// As with MaxRunning, a slot belongs to a lease.
	MaxRunningPerKey int
	// Sequence runs the jobs of each key one at a time, in the order they
	// were enqueued; jobs without a key are not in any sequence.
	Sequence Sequence
}

// Sequence says whether a queue runs each key's jobs one at a time, in
// enqueue order, and what a job that ends dead or cancelled does to the
// ones after it.
type Sequence string

const (
	// NoSequence runs a key's jobs as any others (the default).
	NoSequence Sequence = ""
	// SequenceContinue starts the key's next job once the one before it
	// is done, dead or cancelled.
	SequenceContinue Sequence = "continue"
	// SequenceBlock starts the key's next job only once the one before it
	// is done: a dead or cancelled job holds the key until it is retried
	// and done, or deleted.
	SequenceBlock Sequence = "block"
)

func (l Limits) check() error {
	switch {
	case l.MaxRunning < 0:
		return fmt.Errorf("negative MaxRunning %d", l.MaxRunning)
	case l.Rate < 0:
		return fmt.Errorf("negative Rate %d", l.Rate)
	case l.Per < 0:
		return fmt.Errorf("negative Per %s", l.Per)
	case l.Rate > 0 && l.Per == 0:
		return fmt.Errorf("a Rate of %d has no Per: give both, or neither", l.Rate)
	case l.Rate == 0 && l.Per > 0:
		return fmt.Errorf("a Per of %s has no Rate: give both, or neither", l.Per)
	case l.Per > 0 && l.Per < time.Millisecond:
		return fmt.Errorf("a Per of %s is under a millisecond", l.Per)
	case l.MaxRunningPerKey < 0:
		return fmt.Errorf("negative MaxRunningPerKey %d", l.MaxRunningPerKey)
	case l.Sequence != NoSequence && l.Sequence != SequenceContinue && l.Sequence != SequenceBlock:
		return fmt.Errorf("sequence %q is not %q or %q", string(l.Sequence), SequenceContinue, SequenceBlock)
	}
	return nil
}

var (
	pauseSQL = stmt{
		sqlite: `insert into lite_queues (queue, paused) values (?1, ?2)
on conflict (queue) do update set paused = excluded.paused`,
		postgres: `insert into lite_queues (queue, paused) values ($1, $2)
on conflict (queue) do update set paused = excluded.paused`,
	}
	// setLimitsSQL replaces a queue's limits only when ?8 (a write by
	// hand, or a forced declaration), or the stored limits are the
	// writer's (?7, "" by hand) or nobody's (none set): a declaration never
	// overwrites limits set by hand or declared by another owner. Limits
	// stored as given, by the same owner, are not written again: a
	// declaration at every start writes nothing once it holds.
	setLimitsSQL = stmt{
		sqlite: `insert into lite_queues (queue, max_running, rate, rate_per_ms, max_per_key, sequence, limits_owner) values (?1, ?2, ?3, ?4, ?5, ?6, ?7)
on conflict (queue) do update set max_running = excluded.max_running, rate = excluded.rate, rate_per_ms = excluded.rate_per_ms,
    max_per_key = excluded.max_per_key, sequence = excluded.sequence, limits_owner = excluded.limits_owner,
    window_start = case when (rate, rate_per_ms) = (excluded.rate, excluded.rate_per_ms) then window_start else 0 end
where (?8 or limits_owner = excluded.limits_owner or (max_running = 0 and rate = 0 and max_per_key = 0 and sequence = ''))
  and (max_running, rate, rate_per_ms, max_per_key, sequence, limits_owner)
    <> (excluded.max_running, excluded.rate, excluded.rate_per_ms, excluded.max_per_key, excluded.sequence, excluded.limits_owner)`,
		postgres: `insert into lite_queues (queue, max_running, rate, rate_per_ms, max_per_key, sequence, limits_owner) values ($1, $2, $3, $4, $5, $6, $7)
on conflict (queue) do update set max_running = excluded.max_running, rate = excluded.rate, rate_per_ms = excluded.rate_per_ms,
    max_per_key = excluded.max_per_key, sequence = excluded.sequence, limits_owner = excluded.limits_owner,
    window_start = case when (lite_queues.rate, lite_queues.rate_per_ms) = (excluded.rate, excluded.rate_per_ms) then lite_queues.window_start else 0 end
where ($8 or lite_queues.limits_owner = excluded.limits_owner or (lite_queues.max_running = 0 and lite_queues.rate = 0 and lite_queues.max_per_key = 0 and lite_queues.sequence = ''))
  and (lite_queues.max_running, lite_queues.rate, lite_queues.rate_per_ms, lite_queues.max_per_key, lite_queues.sequence, lite_queues.limits_owner)
    <> (excluded.max_running, excluded.rate, excluded.rate_per_ms, excluded.max_per_key, excluded.sequence, excluded.limits_owner)`,
	}
	// waitForLeasesSQL makes a change of settings on PostgreSQL wait for
	// every lease under way, which read the settings before it, to commit:
	// every lease statement reads lite_queues, and so holds a lock on it
	// from before it takes its snapshot to its commit, which this lock
	// waits for; a lease that begins after it waits for the change to
	// commit, and reads it. So when Pause returns no lease that read the
	// queue as open can still start its jobs. It waits for lite's leases
	// alone, never for an app's transaction that wrote jobs (heartbeats,
	// acks and enqueues do not read lite_queues), and no longer than
	// pauseLockTimeout: meanwhile leases wait behind it. It is the change's
	// first statement: one that first wrote a row of lite_queues would
	// hold a lock that this one conflicts with, and two changes (or a
	// change and a lease waiting for its row) would each wait for the
	// other until the server ended one (a deadlock, 40P01).
	waitForLeasesSQL = stmt{
		postgres: `lock table lite_queues in access exclusive mode`,
	}
	// changesInTurnSQL makes the changes of settings on a server take
	// their turns, before any of them locks what a lease or another change
	// waits for: processes that start together all declare at once, and
	// a change that waited for lite_queues behind the others would fail
	// at pauseLockTimeout. Waiting for its turn, a change holds nothing,
	// so that wait is bounded by its caller's deadline alone. The key is
	// lite_queues' oid: one lock per schema that holds a queue.
	changesInTurnSQL = stmt{
		postgres: `select pg_advisory_xact_lock('lite_queues'::regclass::oid::bigint)`,
	}
	lockTimeoutSQL = stmt{
		postgres: `select set_config('lock_timeout', $1, true)`,
	}
	// A row back at every default goes, so that a file that no longer
	// uses flow control leases as one that never did.
	dropIdleQueuesSQL = stmt{
		sqlite:   `delete from lite_queues where not paused and max_running = 0 and rate = 0 and max_per_key = 0 and sequence = ''`,
		postgres: `delete from lite_queues where not paused and max_running = 0 and rate = 0 and max_per_key = 0 and sequence = ''`,
	}
)

// pauseLockTimeout bounds a change of settings' wait for the leases under
// way (see waitForLeasesSQL): longer than a lease of a frozen host lives
// (Options.ServerTxTimeout), so that a change fails only behind a
// transaction that is not lite's own lease and reads lite_queues (an app's
// open transaction that read Stats): then it fails with ErrBusy rather
// than stop every lease for as long.
func (q *Queue) pauseLockTimeout() time.Duration { return q.opts.ServerTxTimeout + time.Second }

// Pause stops every process from starting jobs of queue until Resume:
// every lease refuses them, a worker's loop, Lease and RunJob alike, and
// running jobs finish as usual. A queue may be paused before it has any
// job.
func (q *Queue) Pause(ctx context.Context, queue string) error {
	if err := q.setPaused(ctx, queue, true); err != nil {
		return fmt.Errorf("pause %s: %w", queue, err)
	}
	return nil
}

// Resume lets queue's jobs start again after Pause. Resuming a queue that
// is not paused changes nothing.
func (q *Queue) Resume(ctx context.Context, queue string) error {
	if err := q.setPaused(ctx, queue, false); err != nil {
		return fmt.Errorf("resume %s: %w", queue, err)
	}
	return nil
}

func (q *Queue) setPaused(ctx context.Context, queue string, paused bool) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	return q.changeFlow(ctx, func(tx txConn) error {
		_, err := tx.ExecContext(ctx, q.sql(pauseSQL), queue, paused)
		return err
	})
}

// SetLimits replaces queue's limits with l, for every process at once;
// Limits{} lifts them. They are then set by hand: a Declaration no longer
// owns them, and leaves them alone unless it forces. Bad limits are
// refused and change nothing. Jobs running past a lowered MaxRunning
// finish; no new one starts until the queue is under it.
func (q *Queue) SetLimits(ctx context.Context, queue string, l Limits) error {
	if err := checkLimits(queue, l); err != nil {
		return fmt.Errorf("set limits of %s: %w", queue, err)
	}
	err := q.changeFlow(ctx, func(tx txConn) error {
		_, err := q.putLimits(ctx, tx, queue, l, "", true)
		return err
	})
	if err != nil {
		return fmt.Errorf("set limits of %s: %w", queue, err)
	}
	return nil
}

// checkLimits refuses limits no queue can have, and a queue's name that
// breaks CheckQueueName's rule unless the limits are lifted: a queue
// named before the rule, limited then, can be set free, never limited
// anew.
func checkLimits(queue string, l Limits) error {
	if l == (Limits{}) {
		return checkQueueName(queue)
	}
	if err := CheckQueueName(queue); err != nil {
		return fmt.Errorf("queue %w", err)
	}
	if err := l.check(); err != nil {
		return codeError{err, ErrInvalid}
	}
	return nil
}

// checkQueueName refuses a name no queue can have, and takes one that
// predates CheckQueueName's rule, so that such a queue can be paused.
func checkQueueName(queue string) error {
	switch {
	case queue == "":
		return codeError{errors.New("queue name is empty"), ErrInvalid}
	case nameProblem(queue) != "":
		return codeError{fmt.Errorf("queue %q %s", queue, nameProblem(queue)), ErrInvalid}
	}
	return nil
}

// putLimits stores queue's limits for owner ("" by hand), over another
// owner's only if force, and says whether it did.
func (q *Queue) putLimits(ctx context.Context, tx txConn, queue string, l Limits, owner string, force bool) (bool, error) {
	res, err := tx.ExecContext(ctx, q.sql(setLimitsSQL), queue, l.MaxRunning, l.Rate, l.Per.Milliseconds(), l.MaxRunningPerKey, string(l.Sequence), owner, force)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// changeFlow runs change, a write of queues' settings, and drops the rows
// back at their defaults, then wakes this process's idle workers: a queue
// they could not take from may be open now. Processes that start together
// all change settings at once (Declare at every start): a change the
// server ended as a deadlock or a serialization failure runs again, a
// few times.
func (q *Queue) changeFlow(ctx context.Context, change func(tx txConn) error) error {
	b := q.txBounds()
	b.statement = 0 // until its turn comes (see changesInTurnSQL)
	err := retryConflicts(ctx, func() error {
		return q.withTxBounded(ctx, b, func(tx txConn) error {
			if q.engine.onServer() {
				if err := q.waitForLeases(ctx, tx); err != nil {
					return err
				}
			}
			if err := change(tx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, q.sql(dropIdleQueuesSQL))
			return err
		})
	})
	if err != nil {
		return classify(err)
	}
	q.notify()
	return nil
}

// conflictRetries is how many times retryConflicts runs a change again.
const conflictRetries = 4

// retryConflicts runs change, and again while the server ends it as a
// deadlock or a serialization failure (which wrote nothing), up to
// conflictRetries times, after a short random wait that grows.
func retryConflicts(ctx context.Context, change func() error) error {
	err := change()
	for i := 1; i <= conflictRetries && conflicted(err); i++ {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i) * time.Duration(5+rand.IntN(20)) * time.Millisecond):
		}
		err = change()
	}
	return err
}

// conflicted reports whether a server ended a transaction as a deadlock
// or a serialization failure.
func conflicted(err error) bool {
	code, ok := sqlState(err)
	return ok && (code == deadlockDetected || code == serializationFailure)
}

// waitForLeases waits, on a server, for the change's turn
// (changesInTurnSQL), then for the leases under way (waitForLeasesSQL),
// and bounds that wait and each statement after it (pauseLockTimeout).
func (q *Queue) waitForLeases(ctx context.Context, tx txConn) error {
	if _, err := tx.ExecContext(ctx, q.sql(changesInTurnSQL)); err != nil {
		return err
	}
	b := q.txBounds()
	b.statement = q.pauseLockTimeout()
	if _, err := q.boundServerTx(ctx, tx, b); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q.sql(lockTimeoutSQL), serverMillis(q.pauseLockTimeout())); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q.sql(waitForLeasesSQL)); err != nil {
		return err
	}
	if afterFlowLock != nil {
		afterFlowLock()
	}
	return nil
}

// queueFlow is one queue's settings, as Stats shows them.
type queueFlow struct {
	paused      bool
	limits      Limits
	limitsOwner string
}

var queueFlowsSQL = stmt{
	sqlite:   `select queue, paused, max_running, rate, rate_per_ms, max_per_key, sequence, limits_owner from lite_queues order by queue`,
	postgres: `select queue, paused, max_running, rate, rate_per_ms, max_per_key, sequence, limits_owner from lite_queues order by queue`,
}

// queueFlows reads every queue's settings; a queue with none is absent.
func (q *Queue) queueFlows(ctx context.Context) (map[string]queueFlow, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(queueFlowsSQL))
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	flows := map[string]queueFlow{}
	for rows.Next() {
		var (
			queue string
			f     queueFlow
			perMS int64
		)
		if err := rows.Scan(&queue, &f.paused, &f.limits.MaxRunning, &f.limits.Rate, &perMS, &f.limits.MaxRunningPerKey, &f.limits.Sequence, &f.limitsOwner); err != nil {
			return nil, classify(err)
		}
		f.limits.Per = time.Duration(perMS) * time.Millisecond
		flows[queue] = f
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	return flows, nil
}
