package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// dueSchedule is a schedule a fire may enqueue for: its job and the tick
// it waits for, as read before the fire.
type dueSchedule struct {
	name, spec, zone string
	job              jobRow
	tick             int64
}

var dueSchedulesSQL = stmt{
	sqlite: `select name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, next_run_at
from lite_schedules where paused = 0 and next_run_at <= ? order by next_run_at, name`,
	postgres: `select name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, next_run_at
from lite_schedules where not paused and next_run_at <= $1 order by next_run_at, name`,
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
		if err := rows.Scan(&d.name, &d.spec, &d.zone, &d.job.queue, &d.job.kind, &d.job.payload, &d.job.priority,
			&d.job.maxAttempts, &d.job.uniqueKey, &d.tick); err != nil {
			return nil, err
		}
		if d.job.payload == nil {
			d.job.payload = []byte{} // an empty blob reads as nil, which would insert null
		}
		due = append(due, d)
	}
	return due, classify(rows.Err())
}

// fireScheduleSQL moves a schedule from the tick it was read at to its
// next: the compare-and-set on next_run_at matches for one fire of a
// tick, however many processes read it as due, and a pause committed
// since the read stops the fire. On PostgreSQL an update that waited for
// another's row lock checks its where clause again on the row that one
// committed, so the guard holds there too.
var fireScheduleSQL = stmt{
	sqlite: `update lite_schedules set next_run_at = ?1, last_run_at = ?2
where name = ?3 and next_run_at = ?2 and paused = 0`,
	postgres: `update lite_schedules set next_run_at = $1, last_run_at = $2
where name = $3 and next_run_at = $2 and not paused`,
}

// fire enqueues d's job for its tick and moves the schedule on to its
// first tick after now, in one transaction. It reports false, having
// written nothing, when the schedule is no longer at that tick (another
// process fired it, or it was changed) or was paused.
func (q *Queue) fire(ctx context.Context, d dueSchedule, now time.Time) (bool, error) {
	c, err := parseCadence(d.spec, d.zone)
	if err != nil {
		return false, fmt.Errorf("schedule %s: %w", d.name, err)
	}
	tick := time.UnixMilli(d.tick)
	next := c.after(tick, now)
	if next.IsZero() || next.After(maxRunAt) {
		// No tick left (a date that will not come again): fire this one
		// and never again, rather than every time a worker looks.
		next = maxRunAt
	}
	fired := false
	err = q.withTx(ctx, func(tx txConn) error {
		res, err := tx.ExecContext(ctx, q.sql(fireScheduleSQL), next.UnixMilli(), d.tick, d.name)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		fired = true
		job := d.job
		job.runAt = d.tick // the job names the tick it stands for
		// A unique key held by an unfinished job skips this tick's job:
		// the schedule asked for runs that never overlap.
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
// runs no worker, or from a test that drives Options.Now.
func (q *Queue) FireSchedules(ctx context.Context) (int, error) {
	n, _, err := q.fireSchedules(ctx)
	return n, err
}

// fireSchedules fires the due schedules and returns how many it fired
// and the earliest tick an unpaused schedule waits for now (zero if
// none).
func (q *Queue) fireSchedules(ctx context.Context) (int, time.Time, error) {
	now := q.opts.Now()
	due, err := q.dueSchedules(ctx, now)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("fire schedules: %w", err)
	}
	n, err := q.fireEach(ctx, due, now)
	if err != nil {
		return n, time.Time{}, fmt.Errorf("fire schedules: %w", err)
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
func (q *Queue) fireEach(ctx context.Context, due []dueSchedule, now time.Time) (int, error) {
	n := 0
	var errs []error
	for _, d := range due {
		fired, err := q.fire(ctx, d, now)
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
