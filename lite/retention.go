package lite

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Retention is how long finished jobs are kept before the cleaner deletes
// them, per finished state, counted from when each job finished. It lives
// in the database, so every process sharing it deletes by the same policy.
// A zero field means that state's default; KeepForever keeps its jobs
// until someone purges them.
type Retention struct {
	Done      time.Duration
	Cancelled time.Duration
	Dead      time.Duration
}

// KeepForever, as a Retention field, keeps that state's jobs forever.
const KeepForever time.Duration = math.MaxInt64

// The retention of each finished state while the database sets none: a
// day for done and cancelled jobs, a week for dead ones, which someone
// may still want to look at or retry.
const (
	DefaultRetainDone      = 24 * time.Hour
	DefaultRetainCancelled = 24 * time.Hour
	DefaultRetainDead      = 7 * 24 * time.Hour
)

// retained is one finished state with how long its jobs are kept.
type retained struct {
	state State
	keep  time.Duration
}

// states lists r's fields by state, in one order everywhere.
func (r Retention) states() []retained {
	return []retained{{StateDone, r.Done}, {StateCancelled, r.Cancelled}, {StateDead, r.Dead}}
}

// field is the field of r that holds state's retention.
func (r *Retention) field(state State) *time.Duration {
	switch state {
	case StateDone:
		return &r.Done
	case StateCancelled:
		return &r.Cancelled
	default:
		return &r.Dead
	}
}

func defaultRetention() Retention {
	return Retention{Done: DefaultRetainDone, Cancelled: DefaultRetainCancelled, Dead: DefaultRetainDead}
}

var retentionSQL = stmt{
	sqlite:   `select state, keep_ms from lite_retention`,
	postgres: `select state, keep_ms from lite_retention`,
}

// Retention is the policy the database holds, with the default for each
// state it sets nothing for.
func (q *Queue) Retention(ctx context.Context) (Retention, error) {
	r, err := q.retention(ctx)
	if err != nil {
		return Retention{}, fmt.Errorf("retention: %w", err)
	}
	return r, nil
}

func (q *Queue) retention(ctx context.Context) (Retention, error) {
	r := defaultRetention()
	rows, err := q.r.QueryContext(ctx, q.sql(retentionSQL))
	if err != nil {
		return r, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			state State
			keep  sql.NullInt64
		)
		if err := rows.Scan(&state, &keep); err != nil {
			return r, classify(err)
		}
		*r.field(state) = KeepForever
		if keep.Valid {
			*r.field(state) = time.Duration(keep.Int64) * time.Millisecond
		}
	}
	return r, classify(rows.Err())
}

var (
	setRetentionSQL = stmt{
		sqlite: `insert into lite_retention (state, keep_ms) values (?, ?)
on conflict (state) do update set keep_ms = excluded.keep_ms`,
		postgres: `insert into lite_retention (state, keep_ms) values ($1, $2)
on conflict (state) do update set keep_ms = excluded.keep_ms`,
	}
	clearRetentionSQL = stmt{
		sqlite:   `delete from lite_retention where state = ?`,
		postgres: `delete from lite_retention where state = $1`,
	}
)

// SetRetention stores r as the database's policy, for every process that
// shares it, all three states in one transaction. A zero field goes back
// to that state's default. A field under a millisecond (other than zero)
// or negative is refused, and nothing changes.
func (q *Queue) SetRetention(ctx context.Context, r Retention) error {
	for _, s := range r.states() {
		if s.keep < 0 || (s.keep > 0 && s.keep < time.Millisecond) {
			err := fmt.Errorf("%s %s is not a time to keep jobs for: use at least 1ms, or KeepForever", s.state, s.keep)
			return fmt.Errorf("set retention: %w", codeError{err, ErrInvalid})
		}
	}
	err := q.withTx(ctx, func(tx txConn) error {
		for _, s := range r.states() {
			var err error
			switch s.keep {
			case 0:
				_, err = tx.ExecContext(ctx, q.sql(clearRetentionSQL), s.state)
			case KeepForever:
				_, err = tx.ExecContext(ctx, q.sql(setRetentionSQL), s.state, nil)
			default:
				_, err = tx.ExecContext(ctx, q.sql(setRetentionSQL), s.state, s.keep.Milliseconds())
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("set retention: %w", classify(err))
	}
	return nil
}

// FormatRetention writes an age the way `lite retention` takes and shows
// it: forever, whole days as days (7d), whole hours as hours (36h), and
// anything else as a Go duration.
func FormatRetention(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == KeepForever:
		return "forever"
	case d%day == 0:
		return strconv.FormatInt(int64(d/day), 10) + "d"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	}
	return d.String()
}
