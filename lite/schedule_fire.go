package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// dueSchedule is a schedule whose tick had come when it was read: its
// name and the tick it waited for. The job comes from the row the fire
// itself reads, so that a change committed since is what the tick
// enqueues.
type dueSchedule struct {
	name string
	tick int64
}

var dueSchedulesSQL = stmt{
	sqlite:   `select name, next_run_at from lite_schedules where paused = 0 and next_run_at <= ? order by next_run_at, name`,
	postgres: `select name, next_run_at from lite_schedules where not paused and next_run_at <= $1 order by next_run_at, name`,
}

// dueSchedules reads the unpaused schedules whose tick has come.
func (q *Queue) dueSchedules(ctx context.Context, now time.Time) ([]dueSchedule, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(dueSchedulesSQL), now.UnixMilli())
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var due []dueSchedule
	for rows.Next() {
		var d dueSchedule
		if err := rows.Scan(&d.name, &d.tick); err != nil {
			return nil, err
		}
		due = append(due, d)
	}
	return due, classify(rows.Err())
}

// fireReadSQL reads, in the fire's transaction, a schedule still at the
// tick it was read at and unpaused: the compare-and-set on next_run_at
// matches for one fire of a tick, however many processes read it as due,
// and a pause committed since the read stops the fire. The job and the
// spec come from this read, not the earlier one, so that a SetSchedule
// committed in between is what the tick enqueues and where it moves on
// to. On PostgreSQL the row lock holds it until the fire commits; on
// SQLite the transaction holds the write lock.
var fireReadSQL = stmt{
	sqlite: `select spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key from lite_schedules
where name = ?1 and next_run_at = ?2 and paused = 0`,
	postgres: `select spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key from lite_schedules
where name = $1 and next_run_at = $2 and not paused for update`,
}

// afterFireLock, when a test sets it, runs in a fire once the schedule's
// row is read (on PostgreSQL, locked): a host frozen there.
var afterFireLock func()

// fireScheduleSQL moves a schedule fireReadSQL found at its tick on to
// its next.
var fireScheduleSQL = stmt{
	sqlite:   `update lite_schedules set next_run_at = ?1, last_run_at = ?2 where name = ?3`,
	postgres: `update lite_schedules set next_run_at = $1, last_run_at = $2 where name = $3`,
}

// fire enqueues d's job for its tick and moves the schedule on to its
// first tick after now, in one transaction, now read once the schedule's
// row is held. It reports false, having written nothing, when the
// schedule is no longer at that tick (another process fired it, or its
// spec changed) or was paused. On a server, a host frozen while it holds
// the row holds it no longer than Options.ServerTxTimeout (see withTx).
func (q *Queue) fire(ctx context.Context, d dueSchedule) (bool, error) {
	fired := false
	err := q.withTx(ctx, func(tx txConn) error {
		var (
			spec, zone string
			job        jobRow
		)
		err := tx.QueryRowContext(ctx, q.sql(fireReadSQL), d.name, d.tick).Scan(&spec, &zone, &job.queue, &job.kind,
			&job.payload, &job.priority, &job.maxAttempts, &job.uniqueKey)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		} else if err != nil {
			return err
		}
		if job.payload == nil {
			job.payload = []byte{} // an empty blob reads as nil, which would insert null
		}
		if afterFireLock != nil {
			afterFireLock()
		}
		c, err := parseCadence(spec, zone)
		if err != nil {
			return err
		}
		next := c.after(time.UnixMilli(d.tick), q.opts.Now())
		if next.IsZero() || next.After(maxRunAt) {
			// No tick left (a date that will not come again): fire this one
			// and never again, rather than every time a worker looks.
			next = maxRunAt
		}
		if _, err := tx.ExecContext(ctx, q.sql(fireScheduleSQL), next.UnixMilli(), d.tick, d.name); err != nil {
			return err
		}
		fired = true
		job.runAt, job.fromNow = d.tick, false // the job names the tick it stands for
		if job.uniqueKey.Valid {
			job.unique.hold = keyHold()
		}
		// A unique key held (until its job is finished, or any other way)
		// skips this tick's job: the schedule asked for runs that never
		// overlap.
		if _, err := q.insert(ctx, tx, job); err != nil && !errors.Is(err, ErrDuplicate) {
			return err
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("schedule %s: %w", d.name, classify(err))
	}
	return fired, nil
}

var nextScheduleSQL = stmt{
	sqlite:   `select min(next_run_at) from lite_schedules where paused = 0`,
	postgres: `select min(next_run_at) from lite_schedules where not paused`,
}

// FireSchedules enqueues the job of every schedule whose tick has come,
// and moves each on to its first tick after now. It returns how many
// ticks this call fired: a tick another process fired first is not
// counted, and not enqueued again. A running Worker calls it by itself
// whenever a schedule comes due; call it directly from a program that
// runs no worker, or from a test that drives Options.Now. Once it fired
// a tick it waits for Options.AfterCommit, once; a Worker's own fires do
// not, as no caller waits on them.
func (q *Queue) FireSchedules(ctx context.Context) (int, error) {
	n, _, err := q.fireSchedules(ctx)
	if err != nil || n == 0 {
		return n, err
	}
	return n, q.afterWrite(ctx, "fire schedules")
}

// fireSchedules reads the due schedules and fires them (see fireDue).
func (q *Queue) fireSchedules(ctx context.Context) (int, time.Time, error) {
	due, err := q.dueSchedules(ctx, q.opts.Now())
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("fire schedules: %w", err)
	}
	return q.fireDue(ctx, due)
}

// fireDue fires the schedules read as due, brings back those a clock
// stepped back left ahead of it, and returns how many it fired and the
// earliest tick an unpaused schedule waits for now (zero if none).
func (q *Queue) fireDue(ctx context.Context, due []dueSchedule) (int, time.Time, error) {
	n, err := q.fireEach(ctx, due)
	if err != nil {
		return n, time.Time{}, fmt.Errorf("fire schedules: %w", err)
	}
	if err := q.rewindAheadSchedules(ctx); err != nil {
		return n, time.Time{}, fmt.Errorf("fire schedules: bring back schedules ahead of the clock: %w", err)
	}
	var next sql.NullInt64
	if err := q.r.QueryRowContext(ctx, q.sql(nextScheduleSQL)).Scan(&next); err != nil {
		return n, time.Time{}, fmt.Errorf("fire schedules: next run: %w", classify(err))
	}
	return n, fromNullMillis(next), nil
}

// fireEach fires the schedules read as due, and wakes this process's
// workers for the jobs it enqueued. A schedule that fails to fire (a busy
// file, a zone this host's time zone database lacks) does not keep the
// others from firing.
func (q *Queue) fireEach(ctx context.Context, due []dueSchedule) (int, error) {
	n := 0
	var errs []error
	for _, d := range due {
		fired, err := q.fire(ctx, d)
		if err != nil {
			errs = append(errs, err)
		}
		if fired {
			n++
		}
	}
	if n > 0 {
		q.notify()
	}
	return n, errors.Join(errs...)
}
