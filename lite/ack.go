package lite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxErrorBytes caps one attempt's recorded error, so that a handler
// printing megabytes cannot bloat its row.
const maxErrorBytes = 4 << 10

// DefaultBackoff waits 1s after the first failed attempt, doubling each
// time up to one hour, and picks a random point in the upper half of that
// so that jobs failing together do not retry together.
func DefaultBackoff(attempt int) time.Duration {
	d := time.Hour
	if attempt < 13 { // 2^12 s > 1 h
		d = min(time.Second<<max(attempt-1, 0), time.Hour)
	}
	return d/2 + rand.N(d/2+1)
}

// checkOwned turns an owner write's outcome into ErrLeaseLost when its
// guard matched no row.
func checkOwned(res sql.Result, err error, l Lease) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return leaseLost(l)
	}
	return nil
}

var ackDoneSQL = stmt{
	sqlite: `update lite_jobs
set state = 'done', result = ?1, finished_at = ` + jobTime("?2").sqlite + `
where id = ?3 and generation = ?4 and state = 'running'`,
	postgres: `update lite_jobs
set state = 'done', result = $1, finished_at = ` + jobTime("$2::bigint").postgres + `
where id = $3 and generation = $4 and state = 'running'`,
}

// AckDone marks the leased job done with result. If the lease is no longer
// current it returns a *LeaseLostError (ErrLeaseLost) and changes
// nothing: a stale result never becomes the job's result.
func (q *Queue) AckDone(ctx context.Context, l Lease, result []byte) error {
	if err := q.markDone(ctx, l, result); err != nil {
		return err
	}
	return q.afterWrite(ctx, "ack done")
}

// markDone is AckDone without the wait after its commit: a Worker's,
// whose settle waits.
func (q *Queue) markDone(ctx context.Context, l Lease, result []byte) error {
	if err := q.checkResult(l, result); err != nil {
		return fmt.Errorf("ack done: %w", err)
	}
	err := q.writeItem(q.sql(ackDoneSQL), &roundItem{ctx: ctx, ack: &Done{Lease: l, Result: result},
		fn: func(c conn) error { return q.ackDone(ctx, c, l, result) }})
	if err != nil {
		return fmt.Errorf("ack done: %w", q.explainLoss(ctx, classify(err), l))
	}
	q.finishedSome()
	return nil
}

func (q *Queue) checkResult(l Lease, result []byte) error {
	if len(result) > q.opts.MaxPayloadBytes {
		return fmt.Errorf("job %d: result of %d bytes: %w (limit %d)",
			l.JobID, len(result), ErrTooLarge, q.opts.MaxPayloadBytes)
	}
	return nil
}

func (q *Queue) ackDone(ctx context.Context, c conn, l Lease, result []byte) error {
	if len(result) == 0 {
		result = nil // an empty result is no result, stored as null
	}
	res, err := c.ExecContext(ctx, q.sql(ackDoneSQL), result, q.nowOn(c).UnixMilli(), l.JobID, l.Generation)
	return checkOwned(res, err, l)
}

// Done is one AckDoneMany entry: a lease and the result to record.
type Done struct {
	Lease  Lease
	Result []byte
}

// ackDoneManySQL acks a list of leases in one statement; each row of the
// list is fenced on its own, and the rows it returns are the acks that
// held. Results travel as hex, since JSON cannot carry bytes.
var ackDoneManySQL = stmt{
	sqlite: `update lite_jobs
set state = 'done', result = unhex(a.value ->> 2), finished_at = ` + jobTime("?1").sqlite + `
from json_each(?2) as a
where lite_jobs.id = a.value ->> 0 and lite_jobs.generation = a.value ->> 1 and lite_jobs.state = 'running'
returning lite_jobs.id, lite_jobs.generation`,
	postgres: ackDoneManyPostgres("$1", "$2"),
}

// ackDoneManyPostgres is ackDoneManySQL's PostgreSQL text with its two
// parameters, the time and the list, named as the caller numbers them: a
// round (see ackAndLeaseSQL) runs it beside a lease.
func ackDoneManyPostgres(now, list string) string {
	return `update lite_jobs
set state = 'done', result = decode(a.value ->> 2, 'hex'), finished_at = ` + jobTime(now+"::bigint").postgres + `
from jsonb_array_elements(` + list + `::jsonb) as a(value)
where lite_jobs.id = (a.value ->> 0)::bigint and lite_jobs.generation = (a.value ->> 1)::bigint and lite_jobs.state = 'running'
returning lite_jobs.id, lite_jobs.generation`
}

// AckDoneMany acks many leases done in one statement: a group commit.
// Each ack is fenced on its own; the result has one entry per ack: nil,
// ErrLeaseLost or ErrTooLarge. It is valid only when the returned error
// is nil or ErrAfterCommit, that is, once the statement committed. The
// acks behave as if made one after another: a lease listed twice is acked
// by its first entry, and a later entry gets ErrLeaseLost, as a second
// AckDone would.
func (q *Queue) AckDoneMany(ctx context.Context, acks []Done) ([]error, error) {
	results, err := q.ackDoneMany(ctx, acks)
	if err != nil {
		return nil, err
	}
	return results, q.afterWrite(ctx, "ack done")
}

// ackDoneMany is AckDoneMany without the wait after its commit: a
// Worker's group commit, which waits once for its whole group.
func (q *Queue) ackDoneMany(ctx context.Context, acks []Done) ([]error, error) {
	var results []error
	err := q.write(ctx, q.sql(ackDoneManySQL), func(c conn) (err error) {
		results, err = q.acksOn(ctx, c, acks)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ack done: %w", classify(err))
	}
	if slices.Contains(results, nil) {
		q.finishedSome()
	}
	return results, nil
}

// acksOn runs ackDoneManySQL on c for acks, with AckDoneMany's results:
// a writer's round (see ackRound) runs it for the plain done-acks it
// gathered.
func (q *Queue) acksOn(ctx context.Context, c conn, acks []Done) ([]error, error) {
	results, encoded, err := q.ackList(acks)
	if err != nil {
		return nil, err
	}
	acked, err := matchedOn(ctx, c, q.sql(ackDoneManySQL), q.nowOn(c).UnixMilli(), encoded)
	if err != nil {
		return nil, err
	}
	return lostUnlessAcked(acks, results, acked), nil
}

// ackList checks a list of done-acks and encodes those that go to the
// database as ackDoneManySQL's list. results holds an error for each ack
// refused before it: a result too large, a lease listed earlier.
func (q *Queue) ackList(acks []Done) (results []error, encoded string, err error) {
	results = make([]error, len(acks))
	list := make([][3]any, 0, len(acks))
	// In one UPDATE ... FROM, a row that two entries match is updated by
	// one of them, chosen by the database: a duplicate must not reach it.
	sent := make(map[[2]int64]bool, len(acks))
	for i, a := range acks {
		if err := q.checkResult(a.Lease, a.Result); err != nil {
			results[i] = err
			continue
		}
		key := [2]int64{a.Lease.JobID, a.Lease.Generation}
		if sent[key] {
			results[i] = fmt.Errorf("%w (listed earlier in this call)", leaseLost(a.Lease))
			continue
		}
		sent[key] = true
		var result any // no result is null; bytes go as hex
		if len(a.Result) > 0 {
			result = hex.EncodeToString(a.Result)
		}
		list = append(list, [3]any{a.Lease.JobID, a.Lease.Generation, result})
	}
	b, err := json.Marshal(list)
	return results, string(b), err
}

// lostUnlessAcked completes results with ErrLeaseLost for each ack sent
// whose guard matched no row: its pair is not among those acked returned.
func lostUnlessAcked(acks []Done, results []error, acked map[[2]int64]bool) []error {
	for i, a := range acks {
		if results[i] == nil && !acked[[2]int64{a.Lease.JobID, a.Lease.Generation}] {
			results[i] = leaseLost(a.Lease)
		}
	}
	return results
}

// Complete marks the leased job done with result, as AckDone does, and
// runs writes in the same transaction, so that writes to the same file
// commit if and only if the lease is still current: for code that leases
// by hand, what CommitWithAck is to a handler. The guard runs first: with
// a lost lease writes is not called and Complete returns a
// *LeaseLostError (ErrLeaseLost). If writes fails, nothing commits and the
// job stays running under the lease. writes may be nil. It must write
// through tx and leave it open: a queue call that writes, made inside
// writes, waits for the writer this transaction holds, forever.
func (q *Queue) Complete(ctx context.Context, l Lease, result []byte, writes func(tx *sql.Tx) error) error {
	if err := q.complete(ctx, l, result, writes); err != nil {
		return fmt.Errorf("complete: %w", q.explainLoss(ctx, err, l))
	}
	return q.afterWrite(ctx, "complete")
}

func (q *Queue) complete(ctx context.Context, l Lease, result []byte, writes func(tx *sql.Tx) error) error {
	if err := q.checkResult(l, result); err != nil {
		return err
	}
	err := q.writeTx(ctx, q.sql(ackDoneSQL), func(tx txConn) error {
		if err := q.ackDone(ctx, tx, l, result); err != nil || writes == nil {
			return err
		}
		if err := ownWrite(writes(tx.tx)); err != nil {
			return writesError{"ack writes", err}
		}
		return nil
	})
	if err == nil {
		q.finishedSome()
	}
	return classify(err)
}

// ownWrite explains an error of the caller's writes that ran in one of
// lite's transactions. That transaction holds the write lock, so only a
// write on another connection can have waited for it: the writes' own,
// waiting for the transaction they run in. It is not ErrBusy: a retry
// would wait just the same.
func ownWrite(err error) error {
	if errors.Is(classify(err), ErrBusy) {
		return fmt.Errorf("a write waited for the ack's own transaction: write through the *sql.Tx given, not Queue.DB() or another connection (%v)", err)
	}
	return err
}

// cutError keeps at most maxErrorBytes of msg, cut between characters so
// that the recorded error stays valid UTF-8 without NUL, and marks a cut
// with "…".
func cutError(msg string) string {
	// PostgreSQL's text holds no NUL, and a command's stderr may: a
	// failure that cannot be written is a job left running until reclaimed.
	msg = strings.ReplaceAll(strings.ToValidUTF8(msg, "\uFFFD"), "\x00", "\uFFFD")
	if len(msg) <= maxErrorBytes {
		return msg
	}
	n := maxErrorBytes
	for n > 0 && !utf8.RuneStart(msg[n]) {
		n--
	}
	return msg[:n] + "…"
}

// maxErrors is how many entries a job's errors log keeps: the latest.
// Attempts are capped, but a job released and retried again and again
// is not, and each entry may hold maxErrorBytes.
const maxErrors = 100

// keptErrors is the errors log with room for one more entry: its oldest
// dropped once it holds maxErrors.
var keptErrors = stmt{
	sqlite:   `(case when json_array_length(errors) >= ` + strconv.Itoa(maxErrors) + ` then json_remove(errors, '$[0]') else errors end)`,
	postgres: `(case when jsonb_array_length(errors) >= ` + strconv.Itoa(maxErrors) + ` then errors - 0 else errors end)`,
}

// ackFailedSQL records the attempt's error and either schedules a retry or,
// with attempts spent or a permanent error, buries the job.
var ackFailedSQL = stmt{
	sqlite: `update lite_jobs
set state = case when ?1 or attempts >= max_attempts then 'dead' else 'available' end,
    run_at = case when ?1 or attempts >= max_attempts then run_at else ` + jobTime("?2").sqlite + ` end,
    finished_at = case when ?1 or attempts >= max_attempts then ` + jobTime("?3").sqlite + ` end,
    ` + leaseKeptIf("?1 or attempts >= max_attempts") + `,
    errors = json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?3, 'error', ?4))
where id = ?5 and generation = ?6 and state = 'running'
returning state, run_at, attempts, max_attempts`,
	postgres: `update lite_jobs
set state = case when $1::boolean or attempts >= max_attempts then 'dead' else 'available' end,
    run_at = case when $1 or attempts >= max_attempts then run_at else ` + jobTime("$2::bigint").postgres + ` end,
    finished_at = case when $1 or attempts >= max_attempts then ` + jobTime("$3::bigint").postgres + ` end,
    ` + leaseKeptIf("$1 or attempts >= max_attempts") + `,
    errors = ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $3::bigint, 'error', $4::text)
where id = $5 and generation = $6 and state = 'running'
returning state, run_at, attempts, max_attempts`,
}

// Failure is a failed attempt as recorded: what CommitWithFailure's and
// Fail's writes are given, and what Fail returns.
type Failure struct {
	// Err is the attempt's error. The errors log keeps its first 4 KiB.
	Err error
	// Attempt is the attempt that failed, from 1, of MaxAttempts.
	Attempt, MaxAttempts int
	// State is available (the job runs again at NextRunAt) or dead.
	State State
	// NextRunAt is when the job runs again; zero when it is dead.
	NextRunAt time.Time
	// Why is WhyRetryLater, WhyAttemptsSpent or WhyPermanent; or, once
	// the failure writes failed, WhyFailureWritesFailed.
	Why Why
}

// AckFailed records cause as the attempt's error. The job goes back to
// available after Options.Backoff, or to dead if its attempts are spent or
// cause is marked Permanent. With a lost lease it returns a
// *LeaseLostError (ErrLeaseLost) and changes nothing. It is Fail without
// writes, for a caller that needs no more than the error.
func (q *Queue) AckFailed(ctx context.Context, l Lease, cause error) error {
	if _, err := q.fail(ctx, l, cause, nil); err != nil {
		return fmt.Errorf("ack failed: %w", q.explainLoss(ctx, err, l))
	}
	return q.afterWrite(ctx, "ack failed")
}

// Fail records cause as the attempt's error, as AckFailed does, and runs
// writes in the same transaction once the guard matched, given the
// failure as recorded: for code that leases by hand, what
// CommitWithFailure is to a handler. The guard runs first: with a lost
// lease writes is not called and Fail returns a *LeaseLostError
// (ErrLeaseLost); nothing changes.
//
// If writes fails, none of it commits, and Fail records the failure
// without it: the returned Failure then has Why WhyFailureWritesFailed and
// an Err that joins cause with the writes' error, which is also what the
// errors log records. The error Fail returns is nil whenever the failure
// was recorded, so check Why to know whether writes committed. writes may
// be nil. It must write through tx and leave it open, as Complete's.
func (q *Queue) Fail(ctx context.Context, l Lease, cause error, writes func(tx *sql.Tx, f Failure) error) (Failure, error) {
	f, err := q.fail(ctx, l, cause, writes)
	if err != nil {
		return Failure{}, fmt.Errorf("fail: %w", q.explainLoss(ctx, err, l))
	}
	return f, q.afterWrite(ctx, "fail")
}

// writesError marks an error of the caller's own writes run in one of
// lite's transactions (Complete's, Fail's, a handler's CommitWithAck and
// CommitWithFailure): the attempt failed, whatever the error wraps. Writes
// that return an error wrapping ErrLeaseLost (a downstream fence refusing
// them, say) do not make lite believe its own lease was lost.
type writesError struct {
	what string
	err  error
}

func (e writesError) Error() string { return e.what + ": " + e.err.Error() }
func (e writesError) Unwrap() error { return e.err }

// isWritesError reports whether err came from the caller's own writes.
func isWritesError(err error) bool {
	var we writesError
	return errors.As(err, &we)
}

// fail records a failure, with writes in its transaction. Inside a
// handler's ack writes it is refused (see uncancelled), before it waits
// for the writer the ack holds.
func (q *Queue) fail(ctx context.Context, l Lease, cause error, writes func(tx *sql.Tx, f Failure) error) (Failure, error) {
	f, err := q.failAttempt(ctx, l, cause, writes)
	if err == nil && f.State == StateDead {
		q.finishedSome()
	}
	return f, err
}

func (q *Queue) failAttempt(ctx context.Context, l Lease, cause error, writes func(tx *sql.Tx, f Failure) error) (Failure, error) {
	if writes == nil {
		return q.recordFailureNow(ctx, l, cause)
	}
	var f Failure
	err := q.writeTx(ctx, q.sql(ackFailedSQL), func(tx txConn) (err error) {
		if f, err = q.recordFailure(ctx, tx, l, cause); err != nil {
			return err
		}
		if err := ownWrite(writes(tx.tx, f)); err != nil {
			return writesError{"failure writes", err}
		}
		return nil
	})
	var writesFailed writesError
	switch {
	case err == nil:
		return f, nil
	case !errors.As(err, &writesFailed):
		return Failure{}, classify(err)
	}
	if f, err = q.recordFailureNow(ctx, l, errors.Join(cause, writesFailed)); err != nil {
		return Failure{}, err
	}
	f.Why = WhyFailureWritesFailed
	return f, nil
}

// recordFailureNow runs recordFailure as a write of its own (see write).
func (q *Queue) recordFailureNow(ctx context.Context, l Lease, cause error) (Failure, error) {
	var f Failure
	err := q.write(ctx, q.sql(ackFailedSQL), func(c conn) (err error) {
		f, err = q.recordFailure(ctx, c, l, cause)
		return err
	})
	if err != nil {
		return Failure{}, classify(err)
	}
	return f, nil
}

// recordFailure runs ackFailedSQL on c and reads the failure it recorded.
func (q *Queue) recordFailure(ctx context.Context, c conn, l Lease, cause error) (Failure, error) {
	msg := "failed"
	if cause != nil {
		msg = cutError(cause.Error())
	}
	now := q.nowOn(c)
	retryAt := now.Add(q.opts.Backoff(l.Attempt)).UnixMilli()
	permanent := IsPermanent(cause)
	f := Failure{Err: cause}
	var runAt int64
	err := c.QueryRowContext(ctx, q.sql(ackFailedSQL), permanent, retryAt, now.UnixMilli(), msg, l.JobID, l.Generation).
		Scan(&f.State, &runAt, &f.Attempt, &f.MaxAttempts)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Failure{}, leaseLost(l)
	case err != nil:
		return Failure{}, classify(err)
	}
	switch {
	case f.State == StateAvailable:
		f.NextRunAt, f.Why = fromMillis(runAt), WhyRetryLater
	case permanent:
		f.Why = WhyPermanent
	default:
		f.Why = WhyAttemptsSpent
	}
	return f, nil
}

// releaseSet puts a running job back to available under a new generation
// and refunds the attempt: the job did not fail, its worker let go of it.
// run_at stays: the job was due, and keeps its place in line.
const releaseSet = `state = 'available', ` + releasedLease

// releasedLease is releaseSet but for the state, which a park that blocks
// its job sets otherwise (see parkAwaitingSQL).
const releasedLease = `generation = generation + 1, attempts = attempts - 1,
    ` + clearedLease

// clearedLease clears the lease fields: a job available again shows no
// lease (its errors log keeps each lost or failed run's attempt and
// generation).
const clearedLease = `lease_token = null, locked_by = null, leased_at = null, heartbeat_at = null, stale_after_ms = null, worker_id = null`

// leaseKeptIf keeps the lease fields where cond holds and clears them
// where it does not: a failed attempt that buries the job keeps its run's
// as the record a done job keeps, one that retries it clears them.
func leaseKeptIf(cond string) string {
	fields := []string{"lease_token", "locked_by", "leased_at", "heartbeat_at", "stale_after_ms", "worker_id"}
	set := make([]string, len(fields))
	for i, f := range fields {
		set[i] = f + " = case when " + cond + " then " + f + " end"
	}
	return strings.Join(set, ",\n    ")
}

var releaseSQL = stmt{
	sqlite: `update lite_jobs set ` + releaseSet + `
where id = ? and generation = ? and state = 'running'`,
	postgres: `update lite_jobs set ` + releaseSet + `
where id = $1 and generation = $2 and state = 'running'`,
}

// Release gives a lease back (graceful shutdown, a session that expired):
// the job is available again at once and the attempt is not held against
// it. With a lost lease it returns a *LeaseLostError (ErrLeaseLost) and
// changes nothing.
func (q *Queue) Release(ctx context.Context, l Lease) error {
	if err := q.release(ctx, l); err != nil {
		return err
	}
	return q.afterWrite(ctx, "release")
}

// release is Release without the wait after its commit: a Worker's,
// whose settle waits when a run's outcome is the release.
func (q *Queue) release(ctx context.Context, l Lease) error {
	err := q.write(ctx, q.sql(releaseSQL), func(c conn) error {
		res, err := c.ExecContext(ctx, q.sql(releaseSQL), l.JobID, l.Generation)
		return checkOwned(res, err, l)
	})
	if err != nil {
		return fmt.Errorf("release: %w", q.explainLoss(ctx, classify(err), l))
	}
	q.notify()
	return nil
}

// releaseUnownedSQL records the release in the errors log, with the
// attempt and the generation it voided, so that `lite show` and the lost
// lease's worker both see what happened; the attempt is refunded all the
// same.
var releaseUnownedSQL = stmt{
	sqlite: `update lite_jobs set ` + releaseSet + `,
    errors = json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?, 'error', ?))
where id = ? and state = 'running'
returning generation`,
	postgres: `update lite_jobs set ` + releaseSet + `,
    errors = ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $1::bigint, 'error', $2::text)
where id = $3 and state = 'running'
returning generation`,
}

// ReleaseUnowned makes a running job available again without holding its
// lease: for admins and tools ("run it again now"). It bumps the
// generation even while a healthy worker holds the job, so that worker's
// later ack is a no-op and reports WhyReleased. The job's errors log
// records it, though the attempt is not held against the job. It returns
// the new generation; a job that is not running gives ErrInvalidState.
func (q *Queue) ReleaseUnowned(ctx context.Context, id int64) (int64, error) {
	var gen int64
	if insideAckWrites(ctx) {
		return 0, fmt.Errorf("release job %d: %w", id, errWriteInsideAck)
	}
	err := q.writeRowNow(ctx, q.sql(releaseUnownedSQL), &gen, releasedText, id)
	if err != nil {
		return 0, fmt.Errorf("release job %d: %w", id, q.explain(ctx, id, err, StateRunning))
	}
	q.notify()
	return gen, q.afterWrite(ctx, fmt.Sprintf("release job %d", id))
}

var snoozeSQL = stmt{
	sqlite: `update lite_jobs set ` + releaseSet + `, run_at = ` + jobTime("?1").sqlite + `
where id = ?2 and generation = ?3 and state = 'running'`,
	postgres: `update lite_jobs set ` + releaseSet + `, run_at = ` + jobTime("$1::bigint").postgres + `
where id = $2 and generation = $3 and state = 'running'`,
}

// Snooze gives a lease back and makes the job available again after d,
// without spending an attempt: for a handler that is waiting on something
// outside. With a lost lease it returns a *LeaseLostError (ErrLeaseLost)
// and changes nothing.
func (q *Queue) Snooze(ctx context.Context, l Lease, d time.Duration) error {
	if _, err := q.snooze(ctx, l, d); err != nil {
		return err
	}
	return q.afterWrite(ctx, "snooze")
}

// snooze is Snooze, returning when the job may run again.
func (q *Queue) snooze(ctx context.Context, l Lease, d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("snooze job %d: negative delay %s", l.JobID, d)
	}
	var runAt int64
	err := q.write(ctx, q.sql(snoozeSQL), func(c conn) error {
		runAt = q.nowOn(c).Add(d).UnixMilli()
		res, err := c.ExecContext(ctx, q.sql(snoozeSQL), runAt, l.JobID, l.Generation)
		return checkOwned(res, err, l)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("snooze: %w", q.explainLoss(ctx, classify(err), l))
	}
	q.notify()
	return fromMillis(runAt), nil
}
