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
	sqlite:   `select state, keep_ms, owner from lite_retention`,
	postgres: `select state, keep_ms, owner from lite_retention`,
}

// Retention is the policy the database holds, with the default for each
// state it sets nothing for.
func (q *Queue) Retention(ctx context.Context) (Retention, error) {
	r, _, err := q.retention(ctx, q.r)
	if err != nil {
		return Retention{}, fmt.Errorf("retention: %w", err)
	}
	return r, nil
}

// RetentionOwners says who set each state's retention that the database
// holds: "" by hand, or the Owner of the Declaration that declared it. A
// state at its default is nobody's, and absent.
func (q *Queue) RetentionOwners(ctx context.Context) (map[State]string, error) {
	_, owners, err := q.retention(ctx, q.r)
	if err != nil {
		return nil, fmt.Errorf("retention owners: %w", err)
	}
	return owners, nil
}

// retention reads the policy and who set each state of it, through c.
func (q *Queue) retention(ctx context.Context, c conn) (Retention, map[State]string, error) {
	r, owners := defaultRetention(), map[State]string{}
	rows, err := c.QueryContext(ctx, q.sql(retentionSQL))
	if err != nil {
		return r, nil, classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			state State
			keep  sql.NullInt64
			owner string
		)
		if err := rows.Scan(&state, &keep, &owner); err != nil {
			return r, nil, classify(err)
		}
		*r.field(state) = KeepForever
		if keep.Valid {
			*r.field(state) = time.Duration(keep.Int64) * time.Millisecond
		}
		owners[state] = owner
	}
	return r, owners, classify(rows.Err())
}

var (
	// setRetentionSQL replaces a state's retention only when ?4 (a write
	// by hand, or a forced declaration) or the stored one is the writer's
	// (?3, "" by hand); clearRetentionSQL, back to the default, likewise:
	// a declaration never overwrites what was set by hand or declared by
	// another owner. One stored as given, by the same owner, is not
	// written again.
	setRetentionSQL = stmt{
		sqlite: `insert into lite_retention (state, keep_ms, owner) values (?1, ?2, ?3)
on conflict (state) do update set keep_ms = excluded.keep_ms, owner = excluded.owner
where (?4 or lite_retention.owner = excluded.owner) and (lite_retention.keep_ms, lite_retention.owner) is not (excluded.keep_ms, excluded.owner)`,
		postgres: `insert into lite_retention (state, keep_ms, owner) values ($1, $2, $3)
on conflict (state) do update set keep_ms = excluded.keep_ms, owner = excluded.owner
where ($4 or lite_retention.owner = excluded.owner) and (lite_retention.keep_ms, lite_retention.owner) is distinct from (excluded.keep_ms, excluded.owner)`,
	}
	clearRetentionSQL = stmt{
		sqlite:   `delete from lite_retention where state = ?1 and (?3 or owner = ?2)`,
		postgres: `delete from lite_retention where state = $1 and ($3 or owner = $2)`,
	}
)

// SetRetention stores r as the database's policy, for every process that
// shares it, in one transaction. A zero field goes back to that state's
// default, which is nobody's (a Declaration may set it again). Each state
// r changes is then set by hand: a Declaration no longer owns it, and
// leaves it alone unless it forces; a state r leaves as it was keeps its
// owner. A field under a millisecond (other than zero) or negative is
// refused, and nothing changes.
func (q *Queue) SetRetention(ctx context.Context, r Retention) error {
	if err := r.check(); err != nil {
		return fmt.Errorf("set retention: %w", err)
	}
	err := q.withTx(ctx, func(tx txConn) error {
		// Read in the write transaction: what it compares with is what it
		// changes.
		was, _, err := q.retention(ctx, tx)
		if err != nil {
			return err
		}
		def := defaultRetention()
		for _, s := range r.states() {
			want := s.keep
			if want == 0 {
				want = *def.field(s.state)
			}
			if *was.field(s.state) == want {
				continue
			}
			if _, err := q.putRetention(ctx, tx, s, "", true); err != nil {
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

func (r Retention) check() error {
	for _, s := range r.states() {
		if s.keep < 0 || (s.keep > 0 && s.keep < time.Millisecond) {
			err := fmt.Errorf("%s %s is not a time to keep jobs for: use at least 1ms, or KeepForever", s.state, s.keep)
			return codeError{err, ErrInvalid}
		}
	}
	return nil
}

// putRetention stores one state's retention for owner ("" by hand), over
// another owner's only if force, and says whether it did.
func (q *Queue) putRetention(ctx context.Context, tx txConn, s retained, owner string, force bool) (bool, error) {
	var res sql.Result
	var err error
	switch s.keep {
	case 0:
		res, err = tx.ExecContext(ctx, q.sql(clearRetentionSQL), s.state, owner, force)
	case KeepForever:
		res, err = tx.ExecContext(ctx, q.sql(setRetentionSQL), s.state, nil, owner, force)
	default:
		res, err = tx.ExecContext(ctx, q.sql(setRetentionSQL), s.state, s.keep.Milliseconds(), owner, force)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
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
