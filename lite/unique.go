package lite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// UniqueUntil is the state of a job that releases its unique key (see
// NewJob.UniqueUntil).
type UniqueUntil string

const (
	// UniqueUntilStarted releases the key when the job is first leased,
	// or ends without having run (cancelled, expired, deleted): another
	// job with the key may then be enqueued while it runs.
	UniqueUntilStarted UniqueUntil = "started"
	// UniqueUntilFinished releases the key when the job is done, dead or
	// cancelled (or deleted).
	UniqueUntilFinished UniqueUntil = "finished"
)

// holdPeriod is the unique_hold of a key held for its period alone.
const holdPeriod = "period"

// uniqueHold is what a validated job asks of its unique key besides the
// key itself.
type uniqueHold struct {
	// hold is the job's unique_hold: holdPeriod, "started" or "finished"
	// (a key alone is held until its job is finished); null without a
	// key.
	hold     sql.NullString
	forMs    int64 // UniqueFor in milliseconds, rounded up
	debounce bool
}

// validateUnique checks j's UniqueFor, UniqueUntil and Debounce (whose
// run time validate has set).
func validateUnique(j NewJob) (uniqueHold, error) {
	var u uniqueHold
	switch {
	case j.UniqueFor < 0:
		return u, fmt.Errorf("negative unique period %s", j.UniqueFor)
	case j.UniqueUntil != "" && j.UniqueUntil != UniqueUntilStarted && j.UniqueUntil != UniqueUntilFinished:
		return u, fmt.Errorf("unique until %q is not %s or %s", j.UniqueUntil, UniqueUntilStarted, UniqueUntilFinished)
	case j.UniqueKey == "" && (j.UniqueFor > 0 || j.UniqueUntil != "" || j.Debounce > 0):
		return u, errors.New("UniqueFor, UniqueUntil and Debounce need a UniqueKey")
	}
	u.debounce = j.Debounce > 0
	u.forMs = j.UniqueFor.Milliseconds()
	if j.UniqueFor%time.Millisecond != 0 {
		u.forMs++ // a period is never shorter than asked
	}
	switch {
	case j.UniqueFor > 0 || j.UniqueUntil != "":
		u.hold = sql.NullString{String: cmp.Or(string(j.UniqueUntil), holdPeriod), Valid: true}
	case j.UniqueKey != "":
		u.hold = keyHold()
	}
	return u, nil
}

// keyHold is the hold of a key given alone (NewJob.UniqueKey, a
// schedule's): until its job is finished, which is what "while it is
// unfinished" comes to, a retry taking it back.
func keyHold() sql.NullString {
	return sql.NullString{String: string(UniqueUntilFinished), Valid: true}
}

// takeUniqueSQL takes the hold of a queue's key for a job about to be
// inserted (job_id 0 until it is, in the same transaction): a new row, or
// the row of a hold that has lapsed, released by its holder's state and
// past its held_until. A hold that has not lapsed is left as it is, and
// the statement changes no row. On a server the upsert locks the row, so
// enqueuers of one key take turns, each seeing the row as the one before
// left it; the guards are on that row alone, never on a read of another
// table that a snapshot could show stale.
var takeUniqueSQL = stmt{
	sqlite: `insert into lite_unique (queue, unique_key, job_id, held_until, released)
values (?1, ?2, 0, ?3, ?4)
on conflict (queue, unique_key) do update
set job_id = 0, held_until = excluded.held_until, released = excluded.released
where lite_unique.released = 1 and lite_unique.held_until <= ?5`,
	postgres: `insert into lite_unique (queue, unique_key, job_id, held_until, released)
values ($1, $2, 0, $3, $4)
on conflict (queue, unique_key) do update
set job_id = 0, held_until = excluded.held_until, released = excluded.released
where lite_unique.released = 1 and lite_unique.held_until <= $5`,
}

var holdUniqueSQL = stmt{
	sqlite:   `update lite_unique set job_id = ?1 where queue = ?2 and unique_key = ?3`,
	postgres: `update lite_unique set job_id = $1 where queue = $2 and unique_key = $3`,
}

var uniqueHeldBySQL = stmt{
	sqlite:   `select job_id from lite_unique where queue = ? and unique_key = ?`,
	postgres: `select job_id from lite_unique where queue = $1 and unique_key = $2`,
}

// insertHeld adds a job with a unique key, if the key's hold has lapsed:
// every kind of key (a period, until a state, a key alone) is a row of
// lite_unique, so that each sees the others. On a key still held it
// returns the id of the job that holds it, and ErrDuplicate. c is inside
// a transaction.
func (q *Queue) insertHeld(ctx context.Context, c conn, r jobRow) (int64, error) {
	now := q.nowOn(c).UnixMilli()
	released := 0
	if r.unique.hold.String == holdPeriod {
		released = 1 // no state to wait for: the period alone holds it
	}
	res, err := c.ExecContext(ctx, q.sql(takeUniqueSQL), r.queue, r.uniqueKey, now+r.unique.forMs, released, now)
	if err != nil {
		return 0, fmt.Errorf("take key: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("take key: %w", err)
	} else if n == 0 {
		var id int64
		if err := c.QueryRowContext(ctx, q.sql(uniqueHeldBySQL), r.queue, r.uniqueKey).Scan(&id); err != nil {
			return 0, fmt.Errorf("key holder: %w", err)
		}
		return id, fmt.Errorf("key %q held by job %d: %w", r.uniqueKey.String, id, ErrDuplicate)
	}
	id, err := q.insertRow(ctx, c, r)
	if err != nil {
		return 0, err
	}
	if _, err := c.ExecContext(ctx, q.sql(holdUniqueSQL), id, r.queue, r.uniqueKey); err != nil {
		return 0, fmt.Errorf("hold key: %w", err)
	}
	return id, nil
}

// debounceSQL folds an enqueue into a pending job: one available and
// never leased (first_leased_at is null; a restore raises every
// generation, so a generation says nothing of it), so a job that has
// started, or started once and came back to be retried, is never
// touched; and one of the enqueue's own kind, so
// that a handler never gets a payload meant for another.
var debounceSQL = stmt{
	sqlite: `update lite_jobs set payload = ?1, run_at = ?2, expires_at = ?3
where id = ?4 and state = 'available' and first_leased_at is null and kind = ?5`,
	postgres: `update lite_jobs set payload = $1, run_at = $2, expires_at = $3
where id = $4 and state = 'available' and first_leased_at is null and kind = $5`,
}

// debounce folds r into the job holding its key if that job is pending,
// and says whether it did. c is inside a transaction.
func (q *Queue) debounce(ctx context.Context, c conn, r jobRow) (int64, bool, error) {
	var id int64
	err := c.QueryRowContext(ctx, q.sql(uniqueHeldBySQL), r.queue, r.uniqueKey).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("debounce: %w", err)
	}
	res, err := c.ExecContext(ctx, q.sql(debounceSQL), r.payload, r.runAt, r.expiresAt, id, r.kind)
	if err != nil {
		return 0, false, fmt.Errorf("debounce: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, false, fmt.Errorf("debounce: %w", err)
	}
	return id, n == 1, nil
}

// cleanHoldsSQL deletes up to ?2 holds that have lapsed as of ?1: each
// would be taken over by the next enqueue of its key anyway. On a server
// the rows are locked and skipped if locked; a row an enqueue took after
// the statement's snapshot is checked again as the enqueue left it, once
// locked.
var cleanHoldsSQL = stmt{
	sqlite: `delete from lite_unique where (queue, unique_key) in (
  select queue, unique_key from lite_unique where released = 1 and held_until <= ?1 limit ?2)`,
	postgres: `delete from lite_unique where (queue, unique_key) in (
  select queue, unique_key from lite_unique where released = 1 and held_until <= $1 limit $2 for update skip locked)`,
}
