package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// explain turns a guarded admin write that matched no row into ErrNotFound
// or ErrInvalidState, by reading what the job is now; any other error is
// classified, as every method's is.
func (q *Queue) explain(ctx context.Context, id int64, err error, want ...State) error {
	if !errors.Is(err, sql.ErrNoRows) {
		return classify(err)
	}
	var state State
	err = q.r.QueryRowContext(ctx, q.sql(jobStateSQL), id).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return classify(err)
	}
	return fmt.Errorf("%w: it is %s, not %s", ErrInvalidState, state, joinStates(want))
}

var jobStateSQL = stmt{
	sqlite:   `select state from lite_jobs where id = ?`,
	postgres: `select state from lite_jobs where id = $1`,
}

func joinStates(states []State) string {
	s := ""
	for i, st := range states {
		switch {
		case i == 0:
		case i == len(states)-1:
			s += " or "
		default:
			s += ", "
		}
		s += string(st)
	}
	return s
}

// cancelSQL ends a blocked, available or running job. A running job changes owner
// (to nobody), so its generation is bumped and its worker's ack is a
// no-op; the errors log records the attempt and the generation it voided.
var cancelSQL = stmt{
	sqlite: `update lite_jobs
` + cancelSet.sqlite + `
where id = ?3 and state in ('blocked', 'available', 'running')
returning generation`,
	postgres: `update lite_jobs
` + cancelSet.postgres + `
where id = $3 and state in ('blocked', 'available', 'running')
returning generation`,
}

// cancelSet is what a cancel writes, one job's or a batch's: ?1 the time,
// ?2 the error the log records for a running job.
var cancelSet = stmt{
	sqlite: `set state = 'cancelled', finished_at = ` + jobTime("?1").sqlite + `,
    generation = generation + (state = 'running'),
    errors = case when state = 'running' then json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?1, 'error', ?2)) else errors end`,
	postgres: `set state = 'cancelled', finished_at = ` + jobTime("$1::bigint").postgres + `,
    generation = generation + (state = 'running')::int,
    errors = case when state = 'running' then ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $1::bigint, 'error', $2::text) else errors end`,
}

// Cancel stops a job: an available job never runs, and a running one's
// lease is voided (its generation bumped), so its worker's ack changes
// nothing and reports WhyCancelled, and its next heartbeat tells it to
// stop; the job's errors log records the cancel of a running job. A
// finished job gives ErrInvalidState.
func (q *Queue) Cancel(ctx context.Context, id int64) error {
	var gen int64
	if insideAckWrites(ctx) {
		return fmt.Errorf("cancel job %d: %w", id, errWriteInsideAck)
	}
	err := q.writeRowNow(ctx, q.sql(cancelSQL), &gen, cancelledText, id)
	if err != nil {
		return fmt.Errorf("cancel job %d: %w", id, q.explain(ctx, id, err, StateBlocked, StateAvailable, StateRunning))
	}
	q.finishedSome()
	return q.afterWrite(ctx, fmt.Sprintf("cancel job %d", id))
}

// retrySQL starts a dead or cancelled job over. Its attempts go back to
// zero, so it has its whole max_attempts again (2 of 2 becomes 0 of 2,
// never 2 of 3), and its errors stay as the record of the runs before:
// each names its generation, which only grows, so an attempt number seen
// twice stays told apart. The lease fields of its last run are cleared:
// an available job shows no lease. The generation stays until the next
// lease bumps it, as every lease does. A job whose dependencies are not
// all done goes back to blocked, waiting for those (see retryWaits).
var retrySQL = stmt{
	sqlite: `update lite_jobs
set ` + retrySet + `, ` + retryTime("?1") + `
where id = ?2 and state in ('dead', 'cancelled')
returning id`,
	postgres: `update lite_jobs
set ` + retrySet + `, ` + retryTime("$1") + `
where id = $2 and state in ('dead', 'cancelled')
returning id`,
}

// retryTime is what a retry at now sets of the job's times: it runs now,
// and an expiry that has passed is cleared. An operator's retry means
// "run it": a job cancelled as expired (never leased, so the lease guard
// still refuses it) would otherwise be cancelled again at once. An
// expiry still to come stays.
func retryTime(now string) string {
	return `run_at = ` + now + `, expires_at = case when expires_at <= ` + now + ` then null else expires_at end`
}

// retryPending counts the dependencies a retried job still waits for:
// those not done, but for a job that runs anyway, and for a job it
// awaits, only those not ended. A dependency deleted has no row and waits
// for nothing.
const retryPending = `(select count(*) from lite_deps w join lite_jobs p on p.id = w.depends_on
    where w.job_id = lite_jobs.id and p.state <> 'done'
      and ((lite_jobs.on_dep_failure <> 'run' and not w.awaits) or p.state not in ('dead', 'cancelled')))`

// retrySet is what a retry sets, but its times: a job that waits again is
// blocked with its count, one that waits for nothing is available, and
// neither is parked any more (a job cancelled while it slept or awaited
// a signal keeps its marker until then).
const retrySet = `state = case when ` + retryPending + ` > 0 then 'blocked' else 'available' end,
    deps_pending = ` + retryPending + `, finished_at = null, attempts = 0, parked = null, parked_on = null, ` + clearedLease

// retryWaits opens again, before a retry, the edges of the jobs in ids,
// so that each dependency retryPending counts counts the retried job down
// when it ends (an edge a dependency's death settled would count
// nothing). An edge to a job already done stays open for good and counts
// nothing: a done job never ends again. The retry comes after, in the
// same transaction: a dependency that ends in between counts on its edge,
// and the retry's count no longer sees it. Only a job the retry starts
// has its edges opened: a waiting job's edges count as they stand.
func retryWaits(ids string) string {
	return `update lite_deps set resolved = 0
where job_id in (select id from lite_jobs where id in ` + ids + ` and state in ('dead', 'cancelled'))`
}

// retryWaitsSQL is retryWaits for one job.
var retryWaitsSQL = stmt{
	sqlite:   retryWaits(`(?)`),
	postgres: retryWaits(`($1)`),
}

// retryLocks locks, on PostgreSQL, the dependencies of the jobs in ids
// before a retry opens their edges and counts them. A dependency's end
// counts only an edge that is open as its statement sees it: without the
// lock, an end under way on another host that passed an edge still
// settled from before, and had not committed when the retry counted the
// dependency as not done, would count the retried job down nowhere, and
// leave it blocked for good. Locked, an end under way commits first and
// the retry's statements, each on a fresh snapshot, see it done; an end
// that comes after waits for the retry and counts on the open edge. On
// SQLite the write lock runs the two one after the other already.
func retryLocks(ids string) string {
	return `select id from lite_jobs where id in (select depends_on from lite_deps where job_id in ` + ids + `)
order by id for share`
}

// retryLocksSQL is retryLocks for one job.
var retryLocksSQL = stmt{
	postgres: retryLocks(`($1)`),
}

// retryOn runs a retry on tx: it locks the dependencies (see retryLocks),
// opens the edges and runs the retry itself, retry.
func (q *Queue) retryOn(ctx context.Context, tx txConn, locks, waits stmt, ids any, retry func() error) error {
	if q.engine.onServer() {
		if _, err := tx.ExecContext(ctx, q.sql(locks), ids); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, q.sql(waits), ids); err != nil {
		return err
	}
	return retry()
}

// Retry starts a dead or cancelled job over, available now: its attempts
// go back to zero, so it gets its whole MaxAttempts again (a job dead
// after 2 of 2 attempts runs up to two more times), whether it died of
// spent attempts or of a Permanent error, and whether it was cancelled
// while waiting or while running. A job whose dependencies are not all
// done is blocked again instead, until they are. An expiry (ExpiresAt)
// that has passed is cleared, so that a job cancelled as expired runs;
// one still to come stays. Its Errors stay as its history; after a Retry
// attempt numbers start again at 1, and each error's Generation tells the
// runs apart. A job in another state gives ErrInvalidState. A job with a
// unique key takes its hold back (until its state again; a period is not
// started over); if another job holds the key now, however it holds it,
// the Retry gives ErrDuplicate, naming that job, and the job stays as it
// is.
func (q *Queue) Retry(ctx context.Context, id int64) error {
	if insideAckWrites(ctx) {
		return fmt.Errorf("retry job %d: %w", id, errWriteInsideAck)
	}
	err := q.writeTx(ctx, q.sql(retrySQL), func(tx txConn) error {
		return q.retryOn(ctx, tx, retryLocksSQL, retryWaitsSQL, id, func() error {
			return tx.QueryRowContext(ctx, q.sql(retrySQL), q.nowMillis(), id).Scan(&id)
		})
	})
	if isUniqueViolation(err) {
		err = q.keyHolder(ctx, id)
	}
	if err != nil {
		return fmt.Errorf("retry job %d: %w", id, q.explain(ctx, id, err, StateDead, StateCancelled))
	}
	q.notify()
	return q.afterWrite(ctx, fmt.Sprintf("retry job %d", id))
}

// isUniqueViolation reports whether err is the refusal of a retry whose
// unique key another job holds (the trigger lite_unique_retaken, which
// raises unique_violation on a server, aborts on SQLite): the only write
// other than an insert that a unique key can refuse.
func isUniqueViolation(err error) bool {
	if code, ok := sqlState(err); ok {
		return code == uniqueViolation
	}
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_TRIGGER
}

var keyHolderSQL = stmt{
	sqlite: `select u.job_id, u.unique_key from lite_jobs j
join lite_unique u on u.queue = j.queue and u.unique_key = j.unique_key
where j.id = ? and u.job_id <> j.id`,
	postgres: `select u.job_id, u.unique_key from lite_jobs j
join lite_unique u on u.queue = j.queue and u.unique_key = j.unique_key
where j.id = $1 and u.job_id <> j.id`,
}

// keyHolder names the job that holds job id's unique key.
func (q *Queue) keyHolder(ctx context.Context, id int64) error {
	var (
		holder int64
		key    string
	)
	if err := q.r.QueryRowContext(ctx, q.sql(keyHolderSQL), id).Scan(&holder, &key); err != nil {
		if errors.Is(err, sql.ErrNoRows) { // the holder finished meanwhile
			return fmt.Errorf("its unique key was held; try again: %w", ErrDuplicate)
		}
		return err
	}
	return fmt.Errorf("key %q held by job %d: %w", key, holder, ErrDuplicate)
}

// Purge deletes jobs in the given finished states (done, dead, cancelled;
// empty means all three) that finished before before, and returns how many
// it deleted. It deletes in batches, each its own transaction, sized by
// time: from 200 rows, each statement grows or shrinks to take about 75ms,
// and a pause of a quarter of its time follows, so other writers of the
// file go on meanwhile and a large purge runs near the raw delete speed;
// if ctx ends between batches it returns what it deleted with ctx's
// error. Ids are never reused, so a purged job's stale lease can
// never match a new one.
func (q *Queue) Purge(ctx context.Context, before time.Time, states ...State) (int64, error) {
	if len(states) == 0 {
		states = []State{StateDone, StateDead, StateCancelled}
	}
	for _, s := range states {
		if !s.Finished() {
			return 0, fmt.Errorf("purge: %q is not a finished state (done, dead, cancelled)", s)
		}
	}
	var rep CleanReport
	for _, s := range slices.Compact(slices.Sorted(slices.Values(states))) {
		// Before is exclusive; the cleaner's cut-off, in milliseconds, is not.
		if err := q.cleanState(ctx, s, before.UnixMilli()-1, &rep, purgePlan()); err != nil {
			return rep.Deleted, fmt.Errorf("purge: %w", err)
		}
	}
	if err := ctx.Err(); err != nil {
		return rep.Deleted, fmt.Errorf("purge: %w", err)
	}
	if rep.Deleted == 0 {
		return 0, nil
	}
	return rep.Deleted, q.afterWrite(ctx, "purge") // once: it covers every batch's commit
}
