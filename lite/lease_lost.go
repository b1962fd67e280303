package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// The errors-log texts of the ways a lease is taken from a running job,
// beside the attempt and the generation they voided: they show in `lite
// show`, and they tell a lost lease why it was lost.
const (
	releasedText  = "released by an admin"
	cancelledText = "cancelled while running"
	// reclaimedPrefix begins the entry reclaimSQL writes.
	reclaimedPrefix = "heartbeat lapsed:"
)

// LeaseLostError is the error an owner write (AckDone, AckFailed, Fail,
// Release, Snooze, Complete) returns when its guard matched no row: it
// wraps ErrLeaseLost and says how the lease ended, as the job's row tells
// it right after the miss. Nothing was written. It is also the cause of a
// handler's context once its worker finds the lease lost
// (context.Cause): there it names the lease and, unless it was superseded
// by this worker's own new lease of the job, not how it ended (Why "").
type LeaseLostError struct {
	// JobID and Generation are the lost lease's.
	JobID, Generation int64
	// CurrentGeneration is the job's generation now; 0 if it is gone.
	CurrentGeneration int64
	// State is the job's state now; "" if it is gone or could not be read.
	State State
	// Why is how the lease ended; "" if the job could not be read, or was
	// not (a handler's context's cause).
	Why Why
}

func (e *LeaseLostError) Error() string {
	msg := fmt.Sprintf("job %d generation %d: %s", e.JobID, e.Generation, ErrLeaseLost)
	switch {
	case e.Why == "":
	case e.State == "":
		msg += ": " + string(e.Why)
	default:
		msg += fmt.Sprintf(": %s (the job is %s at generation %d)", e.Why, e.State, e.CurrentGeneration)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrLeaseLost) hold.
func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }

// leaseLossSQL reads what a lost lease needs to say why: the job's state
// and generation, and the errors-log entry of the lease's generation.
// Each generation has one entry at most; PostgreSQL's limit 1 says what
// SQLite's scalar subquery does anyway: take the first.
var leaseLossSQL = stmt{
	sqlite: `select state, generation,
    (select value ->> 'error' from json_each(errors) where value ->> 'generation' = ?2)
from lite_jobs where id = ?1`,
	postgres: `select state, generation,
    (select value ->> 'error' from jsonb_array_elements(errors) where (value ->> 'generation')::bigint = $2 limit 1)
from lite_jobs where id = $1`,
}

// lossOf reads how lease l ended. A read that fails leaves Why empty:
// the lease is lost all the same.
func (q *Queue) lossOf(ctx context.Context, l Lease) *LeaseLostError {
	e := &LeaseLostError{JobID: l.JobID, Generation: l.Generation}
	var entry sql.NullString
	err := q.r.QueryRowContext(ctx, q.sql(leaseLossSQL), l.JobID, l.Generation).Scan(&e.State, &e.CurrentGeneration, &entry)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		e.Why = WhyDeleted
		return e
	case err != nil:
		return e
	}
	switch {
	case e.CurrentGeneration == l.Generation:
		// Every way of taking a lease bumps the generation: the guard
		// missed on the state, which only the lease's own outcome changes
		// without a new generation. Its errors-log entry, if any, is that
		// outcome's, whatever its text.
		e.Why = WhyAlreadySettled
	case entry.String == releasedText:
		e.Why = WhyReleased
	case entry.String == cancelledText:
		e.Why = WhyCancelled
	case strings.HasPrefix(entry.String, reclaimedPrefix):
		e.Why = WhyReclaimed
	default:
		e.Why = WhySuperseded
	}
	return e
}

// explainLoss turns an ErrLeaseLost from l's guard into a *LeaseLostError
// that says how the lease ended; other errors pass as they are.
func (q *Queue) explainLoss(ctx context.Context, err error, l Lease) error {
	if !errors.Is(err, ErrLeaseLost) || isWritesError(err) {
		return err
	}
	return q.lossOf(ctx, l)
}
