package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Schedule is a periodic job: at every tick of Spec, in TimeZone, a
// running Worker (any of them, whatever queues it serves) enqueues Job.
// Schedules live in the database, so every process sharing it sees the
// same ones, and each tick is enqueued exactly once however many run.
type Schedule struct {
	// Name identifies the schedule; SetSchedule replaces the schedule of
	// the same name.
	Name string
	// Spec is a cron expression: five fields (minute, hour, day of month,
	// month, day of week: "30 6 * * 1-5"), or a descriptor (@yearly,
	// @monthly, @weekly, @daily, @hourly, or @every followed by a duration
	// of a second or more: "@every 5m"). An @every schedule ticks at fixed
	// intervals from when it was set; the others at wall-clock times.
	Spec string
	// TimeZone is the IANA zone Spec's wall-clock fields are read in
	// ("Europe/Berlin"); "" means UTC, whatever the host's zone. Each
	// wall-clock time of Spec fires once on each day it matches, in every
	// zone and across every daylight-saving change: a time the change
	// repeats fires once, at its first instant (a daily 01:30 in
	// America/New_York fires once on the fall-back night), and a time the
	// change skips fires once, at the first instant after the gap (a
	// daily 02:30 fires at 03:00 on the spring-forward night). So an
	// hourly spec fires 23 times on a 23-hour day and 24 on a 25-hour
	// one; an @every schedule keeps its interval in real time.
	TimeZone string
	// Job is what each tick enqueues. RunAt and Delay must be zero: the
	// job's run time is its tick. With a UniqueKey, a tick that finds an
	// unfinished job holding the key enqueues nothing (runs never
	// overlap); the tick still counts as fired.
	Job NewJob
	// Paused schedules fire nothing. SetSchedule can pause a schedule but
	// never resumes one, so a program that registers its schedules at
	// every start does not undo an operator's pause; ResumeSchedule does.
	Paused bool
	// NextRunAt is the tick the schedule waits for; read only. A tick
	// missed while no worker ran is fired once, late, and the schedule
	// moves on to its first tick after now: missed ticks are caught up
	// once, not as a burst.
	NextRunAt time.Time
	// LastRunAt is the tick the schedule last fired for (the RunAt of the
	// job it enqueued), or zero if it has not fired; read only.
	LastRunAt time.Time
	// Owner is who set the schedule: "" by hand (SetSchedule, the CLI,
	// the dashboard), or the Owner of the Declaration that declared it;
	// read only.
	Owner string
}

// scheduleJob is a schedule's job, validated as an enqueue would be.
func (q *Queue) scheduleJob(j NewJob) (jobRow, error) {
	if !j.RunAt.IsZero() || j.Delay != 0 {
		return jobRow{}, errors.New("job: RunAt and Delay must be zero: a scheduled job runs at its tick")
	}
	if len(j.Tags) > 0 || len(j.Meta) > 0 {
		return jobRow{}, errors.New("job: a schedule's job carries no tags or metadata")
	}
	return q.validate(j)
}

// The upsert keeps the stored next run unless the spec or the zone
// changed, so that registering the same schedule at every start never
// moves its ticks; a stored pause stays. It replaces a stored schedule
// only when ?14 (a write by hand, or a forced declaration) or the stored
// owner is the writer's, ?13 ("" by hand): a declaration never overwrites
// a schedule set by hand or declared by another owner. A schedule stored
// as given, by the same owner, is not written again.
var setScheduleSQL = stmt{
	sqlite: `insert into lite_schedules
    (name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, paused, next_run_at,
     created_at, updated_at, owner)
values (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13)
on conflict (name) do update set
    spec = excluded.spec, time_zone = excluded.time_zone, queue = excluded.queue, kind = excluded.kind,
    payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts,
    unique_key = excluded.unique_key, paused = max(lite_schedules.paused, excluded.paused),
    next_run_at = case when lite_schedules.spec = excluded.spec and lite_schedules.time_zone = excluded.time_zone
        then lite_schedules.next_run_at else excluded.next_run_at end,
    updated_at = excluded.updated_at, owner = excluded.owner
where (?14 or lite_schedules.owner = excluded.owner)
  and ((lite_schedules.spec, lite_schedules.time_zone, lite_schedules.queue, lite_schedules.kind, lite_schedules.payload,
        lite_schedules.priority, lite_schedules.max_attempts, lite_schedules.unique_key, lite_schedules.owner)
    is not (excluded.spec, excluded.time_zone, excluded.queue, excluded.kind, excluded.payload,
        excluded.priority, excluded.max_attempts, excluded.unique_key, excluded.owner)
    or excluded.paused > lite_schedules.paused)`,
	postgres: `insert into lite_schedules
    (name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, paused, next_run_at,
     created_at, updated_at, owner)
values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12, $13)
on conflict (name) do update set
    spec = excluded.spec, time_zone = excluded.time_zone, queue = excluded.queue, kind = excluded.kind,
    payload = excluded.payload, priority = excluded.priority, max_attempts = excluded.max_attempts,
    unique_key = excluded.unique_key, paused = lite_schedules.paused or excluded.paused,
    next_run_at = case when lite_schedules.spec = excluded.spec and lite_schedules.time_zone = excluded.time_zone
        then lite_schedules.next_run_at else excluded.next_run_at end,
    updated_at = excluded.updated_at, owner = excluded.owner
where ($14 or lite_schedules.owner = excluded.owner)
  and ((lite_schedules.spec, lite_schedules.time_zone, lite_schedules.queue, lite_schedules.kind, lite_schedules.payload,
        lite_schedules.priority, lite_schedules.max_attempts, lite_schedules.unique_key, lite_schedules.owner)
    is distinct from (excluded.spec, excluded.time_zone, excluded.queue, excluded.kind, excluded.payload,
        excluded.priority, excluded.max_attempts, excluded.unique_key, excluded.owner)
    or excluded.paused and not lite_schedules.paused)`,
}

// SetSchedule adds the schedule s, or replaces the one of the same name,
// as set by hand: a Declaration no longer owns it, and leaves it alone
// unless it forces. Registering the same schedule again keeps its next
// run; a changed Spec or TimeZone starts it over from its first tick
// after now. A bad name, spec, zone or job is an error and nothing is
// stored.
func (q *Queue) SetSchedule(ctx context.Context, s Schedule) error {
	if err := checkScheduleName(s.Name); err != nil {
		return fmt.Errorf("set schedule: %w", err)
	}
	p, err := q.prepareSchedule(s)
	if err != nil {
		return fmt.Errorf("set schedule %s: %w", s.Name, err)
	}
	if insideAckWrites(ctx) {
		return fmt.Errorf("set schedule %s: %w", s.Name, errWriteInsideAck)
	}
	// The first tick is the first after the time the write holds its lock.
	err = q.write(ctx, q.sql(setScheduleSQL), func(tx conn) error {
		_, err := q.putSchedule(ctx, tx, q.opts.Now(), p, "", true)
		return err
	})
	if err != nil {
		return fmt.Errorf("set schedule %s: %w", s.Name, classify(err))
	}
	q.sched.wake()
	return nil
}

// preparedSchedule is a schedule checked and ready to store.
type preparedSchedule struct {
	s   Schedule
	c   cadence
	job jobRow
}

func checkScheduleName(name string) error {
	if name == "" {
		return errors.New("the name is empty")
	}
	if problem := nameProblem(name); problem != "" {
		return fmt.Errorf("name %q %s", name, problem)
	}
	return nil
}

// prepareSchedule checks s's spec, zone and job.
func (q *Queue) prepareSchedule(s Schedule) (preparedSchedule, error) {
	if problem := nameProblem(s.Spec); problem != "" {
		return preparedSchedule{}, codeError{fmt.Errorf("spec %q %s", s.Spec, problem), ErrInvalid}
	}
	c, err := parseCadence(s.Spec, s.TimeZone)
	if err != nil {
		return preparedSchedule{}, codeError{err, ErrInvalid}
	}
	r, err := q.scheduleJob(s.Job)
	if err != nil {
		return preparedSchedule{}, err
	}
	return preparedSchedule{s, c, r}, nil
}

// putSchedule stores p for owner ("" by hand), over another owner's only
// if force, and says whether it did.
func (q *Queue) putSchedule(ctx context.Context, tx conn, now time.Time, p preparedSchedule, owner string, force bool) (bool, error) {
	next := p.c.after(time.Time{}, now)
	if next.IsZero() || next.After(maxRunAt) {
		return false, codeError{fmt.Errorf("spec %q has no tick after %s", p.s.Spec, now.UTC().Format(time.RFC3339)), ErrInvalid}
	}
	r := p.job
	res, err := tx.ExecContext(ctx, q.sql(setScheduleSQL), p.s.Name, p.s.Spec, p.s.TimeZone, r.queue, r.kind, r.payload,
		r.priority, r.maxAttempts, r.uniqueKey, p.s.Paused, next.UnixMilli(), now.UnixMilli(), owner, force)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

var schedulesSQL = stmt{
	sqlite: `select name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, paused,
    next_run_at, last_run_at, owner
from lite_schedules order by name`,
	postgres: `select name, spec, time_zone, queue, kind, payload, priority, max_attempts, unique_key, paused,
    next_run_at, last_run_at, owner
from lite_schedules order by name`,
}

// Schedules lists every schedule, by name.
func (q *Queue) Schedules(ctx context.Context) ([]Schedule, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(schedulesSQL))
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", classify(err))
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		var s Schedule
		var key sql.NullString
		var next int64
		var last sql.NullInt64
		if err := rows.Scan(&s.Name, &s.Spec, &s.TimeZone, &s.Job.Queue, &s.Job.Kind, &s.Job.Payload, &s.Job.Priority,
			&s.Job.MaxAttempts, &key, &s.Paused, &next, &last, &s.Owner); err != nil {
			return nil, fmt.Errorf("schedules: %w", err)
		}
		s.Job.UniqueKey = key.String
		s.NextRunAt = time.UnixMilli(next)
		s.LastRunAt = fromNullMillis(last)
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedules: %w", classify(err))
	}
	return out, nil
}

var removeScheduleSQL = stmt{
	sqlite:   `delete from lite_schedules where name = ?`,
	postgres: `delete from lite_schedules where name = $1`,
}

// RemoveSchedule deletes the schedule; jobs it enqueued stay. An unknown
// name gives ErrNoSchedule.
func (q *Queue) RemoveSchedule(ctx context.Context, name string) error {
	return q.changeSchedule(ctx, "remove", name, removeScheduleSQL)
}

var pauseScheduleSQL = stmt{
	sqlite:   `update lite_schedules set paused = 1, updated_at = ?2 where name = ?1`,
	postgres: `update lite_schedules set paused = true, updated_at = $2 where name = $1`,
}

// PauseSchedule stops the schedule firing until ResumeSchedule; a
// paused schedule stays paused when a program sets it again. Pausing a
// paused schedule changes nothing. An unknown name gives ErrNoSchedule.
func (q *Queue) PauseSchedule(ctx context.Context, name string) error {
	return q.changeSchedule(ctx, "pause", name, pauseScheduleSQL, q.nowMillis())
}

// changeSchedule runs a write of one schedule by name, which must match.
func (q *Queue) changeSchedule(ctx context.Context, op, name string, s stmt, args ...any) error {
	if insideAckWrites(ctx) {
		return fmt.Errorf("%s schedule %s: %w", op, name, errWriteInsideAck)
	}
	res, err := q.writer().ExecContext(ctx, q.sql(s), append([]any{name}, args...)...)
	if err != nil {
		return fmt.Errorf("%s schedule %s: %w", op, name, classify(err))
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("%s schedule %s: %w", op, name, err)
	} else if n == 0 {
		return fmt.Errorf("%s schedule %s: %w", op, name, ErrNoSchedule)
	}
	q.sched.wake()
	return nil
}

var resumeReadSQL = stmt{
	sqlite:   `select spec, time_zone, paused, next_run_at from lite_schedules where name = ?`,
	postgres: `select spec, time_zone, paused, next_run_at from lite_schedules where name = $1 for update`,
}

var resumeScheduleSQL = stmt{
	sqlite:   `update lite_schedules set paused = 0, next_run_at = ?2, updated_at = ?3 where name = ?1`,
	postgres: `update lite_schedules set paused = false, next_run_at = $2, updated_at = $3 where name = $1`,
}

// ResumeSchedule lets a paused schedule fire again from its first tick
// after now: the ticks that passed while it was paused are skipped, not
// caught up. Resuming a schedule that is not paused changes nothing. An
// unknown name gives ErrNoSchedule.
func (q *Queue) ResumeSchedule(ctx context.Context, name string) error {
	if insideAckWrites(ctx) {
		return fmt.Errorf("resume schedule %s: %w", name, errWriteInsideAck)
	}
	// Read and write in one write transaction: a change of spec between
	// them would otherwise get a next run computed from the old one.
	err := q.withTx(ctx, func(tx txConn) error {
		var spec, zone string
		var paused bool
		var stored int64
		err := tx.QueryRowContext(ctx, q.sql(resumeReadSQL), name).Scan(&spec, &zone, &paused, &stored)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoSchedule
		}
		if err != nil || !paused {
			return err
		}
		c, err := parseCadence(spec, zone)
		if err != nil {
			return err
		}
		now := q.opts.Now()
		next := time.UnixMilli(stored)
		if !next.After(now) {
			next = c.after(next, now)
		}
		_, err = tx.ExecContext(ctx, q.sql(resumeScheduleSQL), name, next.UnixMilli(), now.UnixMilli())
		return err
	})
	if err != nil {
		return fmt.Errorf("resume schedule %s: %w", name, classify(err))
	}
	q.sched.wake()
	return nil
}
