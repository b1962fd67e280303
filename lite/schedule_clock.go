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
// compare-and-set as a fire, and enqueues nothing: a fire or a change
// committed since the read wins.
var rewindScheduleSQL = stmt{
	sqlite:   `update lite_schedules set next_run_at = ?1 where name = ?2 and next_run_at = ?3 and paused = 0`,
	postgres: `update lite_schedules set next_run_at = $1 where name = $2 and next_run_at = $3 and not paused`,
}

// rewindAheadSchedules brings every schedule that waits past the spec's
// next tick from now back to that tick.
func (q *Queue) rewindAheadSchedules(ctx context.Context, now time.Time) error {
	type ahead struct {
		name, spec, zone string
		next             int64
	}
	var found []ahead
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
		want := c.after(time.Time{}, now)
		if want.IsZero() || want.UnixMilli() >= a.next {
			continue
		}
		if _, err := q.writer().ExecContext(ctx, q.sql(rewindScheduleSQL), want.UnixMilli(), a.name, a.next); err != nil {
			return classify(err)
		}
	}
	return nil
}
