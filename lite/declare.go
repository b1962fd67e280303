package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Declaration is what a program says it wants of the settings it owns:
// its schedules, and its defaults for retention and queue limits. Declare
// makes the database hold it, by these rules:
//
//   - What it declares is written with its Owner's mark, unless someone
//     else holds that setting: an operator who set it by hand (the CLI,
//     the dashboard, SetSchedule, SetRetention, SetLimits) or another
//     owner's declaration. Then it is left as it is, unless Force.
//   - What an earlier declaration of the same Owner declared and this one
//     no longer does is removed: a schedule is deleted, limits are lifted,
//     a retention goes back to lite's default. Settings of other owners
//     and settings made by hand are never removed.
//   - Declaring the same thing again changes nothing and writes nothing
//     (Declared.Unchanged): a schedule whose spec and zone are unchanged
//     keeps its next tick, so no tick is lost or fired twice, and a pause
//     (by hand) stays.
//
// A setting back at its default (a removed schedule, lifted limits, a
// retention at lite's) is nobody's: the next declaration that names it
// takes it.
type Declaration struct {
	// Owner names the program (or the part of it) that owns what it
	// declares: "billing-app". Each Owner's declaration replaces its own
	// previous one only.
	Owner string
	// Schedules are the owner's schedules, by name: one it declared before
	// and leaves out here is deleted. A Schedule's Paused can pause it but
	// never resumes it, as SetSchedule.
	Schedules []Schedule
	// Retention is the owner's policy; a zero field declares nothing for
	// that state (its retention goes back to the default if the owner had
	// declared one).
	Retention Retention
	// Limits are the owner's limits, by queue; a queue it declared before
	// and leaves out here has its limits lifted.
	Limits map[string]Limits
	// Force overwrites what others hold, settings made by hand among them,
	// and makes them the Owner's.
	Force bool
}

// Declared is what a Declare changed, and what it left to others.
type Declared struct {
	// Written are the settings it wrote, Removed those an earlier
	// declaration of the owner made and it no longer does, Held those it
	// left because they were set by hand or by another owner, Unchanged
	// those the owner held already as declared, which it did not write.
	// Each reads "schedule NAME", "limits QUEUE" or "retention STATE".
	Written, Removed, Held, Unchanged []string
}

// Who holds a setting, by its key (?1): note reads it for a setting the
// declaration did not write.
var (
	scheduleOwnerSQL = stmt{
		sqlite:   `select owner from lite_schedules where name = ?1`,
		postgres: `select owner from lite_schedules where name = $1`,
	}
	retentionOwnerSQL = stmt{
		sqlite:   `select owner from lite_retention where state = ?1`,
		postgres: `select owner from lite_retention where state = $1`,
	}
	limitsOwnerSQL = stmt{
		sqlite:   `select limits_owner from lite_queues where queue = ?1`,
		postgres: `select limits_owner from lite_queues where queue = $1`,
	}
)

// note records what d did to the setting what, whose key is key: written,
// or else unchanged if d's owner holds it (the write found it as
// declared), or held by someone else.
func (q *Queue) note(ctx context.Context, tx txConn, out *Declared, d Declaration, written bool, what string, owner stmt, key string) error {
	if written {
		out.Written = append(out.Written, what)
		return nil
	}
	var holder string
	if err := tx.QueryRowContext(ctx, q.sql(owner), key).Scan(&holder); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if holder == d.Owner {
		out.Unchanged = append(out.Unchanged, what)
	} else {
		out.Held = append(out.Held, what)
	}
	return nil
}

// Declare makes the database hold d (see Declaration), in one
// transaction: every process sees all of it or none. Call it at every
// start of the program: processes that start together may all declare at
// once, on either engine. A bad schedule, retention or limit is an error
// and nothing changes.
func (q *Queue) Declare(ctx context.Context, d Declaration) (Declared, error) {
	var out Declared
	scheds, err := q.checkDeclaration(d)
	if err != nil {
		return out, fmt.Errorf("declare %s: %w", d.Owner, err)
	}
	if insideAckWrites(ctx) {
		return out, fmt.Errorf("declare %s: %w", d.Owner, errWriteInsideAck)
	}
	err = q.changeFlow(ctx, func(tx txConn) error {
		out = Declared{}
		if err := q.declareSchedules(ctx, tx, d, scheds, &out); err != nil {
			return err
		}
		if err := q.declareRetention(ctx, tx, d, &out); err != nil {
			return err
		}
		return q.declareLimits(ctx, tx, d, &out)
	})
	if err != nil {
		return Declared{}, fmt.Errorf("declare %s: %w", d.Owner, err)
	}
	q.sched.wake()
	return out, nil
}

// checkDeclaration checks all of d before anything is written.
func (q *Queue) checkDeclaration(d Declaration) ([]preparedSchedule, error) {
	switch {
	case d.Owner == "":
		return nil, codeError{errors.New("the owner is empty: a declaration needs one"), ErrInvalid}
	case nameProblem(d.Owner) != "":
		return nil, codeError{fmt.Errorf("owner %q %s", d.Owner, nameProblem(d.Owner)), ErrInvalid}
	}
	if err := d.Retention.check(); err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	for queue, l := range d.Limits {
		if err := checkLimits(queue, l); err != nil {
			return nil, fmt.Errorf("limits of %s: %w", queue, err)
		}
	}
	var out []preparedSchedule
	for i, s := range d.Schedules {
		if err := checkScheduleName(s.Name); err != nil {
			return nil, fmt.Errorf("schedule: %w", err)
		}
		if slices.ContainsFunc(d.Schedules[:i], func(o Schedule) bool { return o.Name == s.Name }) {
			return nil, codeError{fmt.Errorf("schedule %s is declared twice", s.Name), ErrInvalid}
		}
		p, err := q.prepareSchedule(s)
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", s.Name, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// removeSchedulesSQL deletes the owner's (?1) schedules whose names are
// not in ?2: a guard on the owner, so that a declaration removes its own
// schedules only, never another's or one set by hand.
var removeSchedulesSQL = stmt{
	sqlite:   `delete from lite_schedules where owner = ?1 and name not in (select value from json_each(?2)) returning name`,
	postgres: `delete from lite_schedules where owner = $1 and name not in (select jsonb_array_elements_text($2::jsonb)) returning name`,
}

func (q *Queue) declareSchedules(ctx context.Context, tx txConn, d Declaration, scheds []preparedSchedule, out *Declared) error {
	now := q.opts.Now()
	names := []string{}
	for _, p := range scheds {
		written, err := q.putSchedule(ctx, tx, now, p, d.Owner, d.Force)
		if err != nil {
			return fmt.Errorf("schedule %s: %w", p.s.Name, err)
		}
		if err := q.note(ctx, tx, out, d, written, "schedule "+p.s.Name, scheduleOwnerSQL, p.s.Name); err != nil {
			return err
		}
		names = append(names, p.s.Name)
	}
	removed, err := q.removeUndeclared(ctx, tx, removeSchedulesSQL, d.Owner, names)
	for _, name := range removed {
		out.Removed = append(out.Removed, "schedule "+name)
	}
	return err
}

// removeUndeclared runs remove for owner and the names it declares, and
// returns the names it removed.
func (q *Queue) removeUndeclared(ctx context.Context, tx txConn, remove stmt, owner string, names []string) ([]string, error) {
	declared, err := json.Marshal(names)
	if err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, q.sql(remove), owner, string(declared))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var removed []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		removed = append(removed, name)
	}
	return removed, rows.Err()
}

func (q *Queue) declareRetention(ctx context.Context, tx txConn, d Declaration, out *Declared) error {
	for _, s := range d.Retention.states() {
		what := "retention " + string(s.state)
		// A zero field clears the owner's own retention of the state, if
		// it has one: never forced, whatever d says.
		force := d.Force && s.keep != 0
		written, err := q.putRetention(ctx, tx, s, d.Owner, force)
		switch {
		case err != nil:
			return err
		case s.keep == 0 && written:
			out.Removed = append(out.Removed, what)
		case s.keep != 0:
			if err := q.note(ctx, tx, out, d, written, what, retentionOwnerSQL, string(s.state)); err != nil {
				return err
			}
		}
	}
	return nil
}

// liftUndeclaredLimitsSQL lifts the owner's (?1) limits of the queues not
// in ?2: a guard on the owner, so that a declaration lifts its own limits
// only, never another's or those set by hand. A row left at every default
// is then dropped (dropIdleQueuesSQL).
var liftUndeclaredLimitsSQL = stmt{
	sqlite: `update lite_queues set max_running = 0, rate = 0, rate_per_ms = 0, window_start = 0, window_starts = 0, max_per_key = 0, sequence = '',
    limits_owner = ''
where limits_owner = ?1 and queue not in (select value from json_each(?2)) returning queue`,
	postgres: `update lite_queues set max_running = 0, rate = 0, rate_per_ms = 0, window_start = 0, window_starts = 0, max_per_key = 0, sequence = '',
    limits_owner = ''
where limits_owner = $1 and queue not in (select jsonb_array_elements_text($2::jsonb)) returning queue`,
}

func (q *Queue) declareLimits(ctx context.Context, tx txConn, d Declaration, out *Declared) error {
	queues := []string{}
	for queue := range d.Limits {
		queues = append(queues, queue)
	}
	slices.Sort(queues) // one lock order on a server, and a stable report
	for _, queue := range queues {
		written, err := q.putLimits(ctx, tx, queue, d.Limits[queue], d.Owner, d.Force)
		if err != nil {
			return fmt.Errorf("limits of %s: %w", queue, err)
		}
		if err := q.note(ctx, tx, out, d, written, "limits "+queue, limitsOwnerSQL, queue); err != nil {
			return err
		}
	}
	removed, err := q.removeUndeclared(ctx, tx, liftUndeclaredLimitsSQL, d.Owner, queues)
	for _, queue := range removed {
		out.Removed = append(out.Removed, "limits "+queue)
	}
	return err
}
