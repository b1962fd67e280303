package lite

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// releaseSet puts a running job back to available under a new generation
// and refunds the attempt: the job did not fail, its worker let go of it.
// run_at stays: the job was due, and keeps its place in line.
const releaseSet = `state = 'available', generation = generation + 1, attempts = attempts - 1,
    ` + clearedLease

// clearedLease clears the lease fields: a job available again shows no
// lease (its errors log keeps each lost or failed run's attempt and
// generation).
const clearedLease = `lease_token = null, locked_by = null, leased_at = null, heartbeat_at = null, stale_after_ms = null`

// leaseKeptIf keeps the lease fields where cond holds and clears them
// where it does not: a failed attempt that buries the job keeps its run's
// as the record a done job keeps, one that retries it clears them.
func leaseKeptIf(cond string) string {
	fields := []string{"lease_token", "locked_by", "leased_at", "heartbeat_at", "stale_after_ms"}
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
	res, err := q.writer().ExecContext(ctx, q.sql(releaseSQL), l.JobID, l.Generation)
	if err := checkOwned(res, err, l); err != nil {
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
	err := q.writer().QueryRowContext(ctx, q.sql(releaseUnownedSQL), q.nowMillis(), releasedText, id).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("release job %d: %w", id, q.explain(ctx, id, err, StateRunning))
	}
	q.notify()
	return gen, nil
}

var snoozeSQL = stmt{
	sqlite: `update lite_jobs set ` + releaseSet + `, run_at = ?
where id = ? and generation = ? and state = 'running'`,
	postgres: `update lite_jobs set ` + releaseSet + `, run_at = $1
where id = $2 and generation = $3 and state = 'running'`,
}

// Snooze gives a lease back and makes the job available again after d,
// without spending an attempt: for a handler that is waiting on something
// outside. With a lost lease it returns a *LeaseLostError (ErrLeaseLost)
// and changes nothing.
func (q *Queue) Snooze(ctx context.Context, l Lease, d time.Duration) error {
	_, err := q.snooze(ctx, l, d)
	return err
}

// snooze is Snooze, returning when the job may run again.
func (q *Queue) snooze(ctx context.Context, l Lease, d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, fmt.Errorf("snooze job %d: negative delay %s", l.JobID, d)
	}
	runAt := q.opts.Now().Add(d).UnixMilli()
	res, err := q.writer().ExecContext(ctx, q.sql(snoozeSQL), runAt, l.JobID, l.Generation)
	if err := checkOwned(res, err, l); err != nil {
		return time.Time{}, fmt.Errorf("snooze: %w", q.explainLoss(ctx, classify(err), l))
	}
	q.notify()
	return fromMillis(runAt), nil
}
