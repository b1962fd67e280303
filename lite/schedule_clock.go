package lite

import (
	"context"
	"time"
)

// A schedule written with a clock later than now (the clock went back:
// an NTP fix, a VM restored) can wait for a tick that the spec, read from
// now, puts much later than its next one: a minutely schedule would stay
// silent for the size of the step. Such a schedule is brought back to its
// next tick from now. Only a row some write stamped after now (a fire's
// last_run_at, a change's updated_at) can be one, which keeps the look
// cheap when the clock is right; and only by more than clockSkew, the
// difference between two hosts' readings of one server clock, or a host
// whose clock reads a millisecond behind the one that fired a tick would
// take that tick for one still to come and fire it again.
// clockSkew is how far two processes' clocks may differ without either
// being taken for a clock stepped back: far more than the skew of two
// hosts syncing to one PostgreSQL server, far less than a step worth
// correcting. Rate windows in lite_queues allow the same second.
const clockSkew = time.Second

var aheadSchedulesSQL = stmt{
	sqlite: `select name, spec, time_zone, next_run_at from lite_schedules
where paused = 0 and next_run_at > ?1 and (last_run_at > ?2 or updated_at > ?2)`,
	postgres: `select name, spec, time_zone, next_run_at from lite_schedules
where not paused and next_run_at > $1 and (last_run_at > $2 or updated_at > $2)`,
}

// rewindScheduleSQL moves a schedule's next run earlier by the same
// compare-and-set as a fire, and only while a write stamped the row more
// than clockSkew after the clock (read once the write holds its lock); it
// enqueues nothing: a fire or a change committed since the read wins.
var rewindScheduleSQL = stmt{
	sqlite: `update lite_schedules set next_run_at = ?1
where name = ?2 and next_run_at = ?3 and paused = 0 and (last_run_at > ?4 or updated_at > ?4)`,
	postgres: `update lite_schedules set next_run_at = $1
where name = $2 and next_run_at = $3 and not paused and (last_run_at > $4 or updated_at > $4)`,
}

// rewindAheadSchedules brings every schedule that waits past the spec's
// next tick from now back to that tick. It reads the clock itself, after
// the fires it follows, and each rewind reads it again once its write
// holds its lock: a clock read before a wait (a fire that waited for a
// row another process held, a loaded host) would take the ticks fired
// meanwhile for a clock stepped back, and bring the schedule back to fire
// them again.
func (q *Queue) rewindAheadSchedules(ctx context.Context) error {
	type ahead struct {
		name, spec, zone string
		next             int64
	}
	var found []ahead
	now := q.opts.Now()
	rows, err := q.r.QueryContext(ctx, q.sql(aheadSchedulesSQL), now.UnixMilli(), now.Add(clockSkew).UnixMilli())
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var a ahead
		if err := rows.Scan(&a.name, &a.spec, &a.zone, &a.next); err != nil {
			return classify(err)
		}
		found = append(found, a)
	}
	if err := rows.Err(); err != nil {
		return classify(err)
	}
	for _, a := range found {
		c, err := parseCadence(a.spec, a.zone)
		if err != nil {
			continue // a zone this host lacks: the fire reports it at the tick
		}
		if err := q.rewind(ctx, a.name, c, a.next); err != nil {
			return err
		}
	}
	return nil
}

// rewind brings schedule name, read waiting for next, back to c's first
// tick from now, if that is earlier.
func (q *Queue) rewind(ctx context.Context, name string, c cadence, next int64) error {
	query := q.sql(rewindScheduleSQL)
	return q.write(ctx, query, func(w conn) error {
		now := q.opts.Now()
		want := c.after(time.Time{}, now)
		if want.IsZero() || want.UnixMilli() >= next {
			return nil
		}
		_, err := w.ExecContext(ctx, query, want.UnixMilli(), name, next, now.Add(clockSkew).UnixMilli())
		return classify(err)
	})
}
