package lite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// State is where a job is in its life.
type State string

// The states of a job. Done, dead and cancelled are final until Retry.
const (
	StateAvailable State = "available" // waiting for run_at, then for a worker
	StateRunning   State = "running"   // leased by a worker
	StateDone      State = "done"      // acknowledged with a result
	StateDead      State = "dead"      // failed with no attempts left, or permanently
	StateCancelled State = "cancelled" // cancelled by an admin, or by a dependency that did not end done
	StateBlocked   State = "blocked"   // waiting for the jobs it depends on (NewJob.DependsOn)
)

// States lists every state in the order a job moves through them, with
// blocked (which comes before available, for a job that waits for others)
// last, where it was added, so that the columns of lite stats keep their
// places.
var States = []State{StateAvailable, StateRunning, StateDone, StateDead, StateCancelled, StateBlocked}

func (s State) valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Finished reports whether s is an end: done, dead or cancelled.
func (s State) Finished() bool {
	return s == StateDone || s == StateDead || s == StateCancelled
}

// Lease identifies one lease of one job. Its identity is the pair (JobID,
// Generation): every change of ownership bumps the job's generation, so a
// Lease held by a worker that lost the job matches no row.
type Lease struct {
	JobID      int64
	Generation int64
	// Attempt is the job's attempt number under this lease, from 1. It
	// picks the backoff when the attempt fails.
	Attempt int
	// Token is a UUID fresh for every lease: for logs, or for a handler
	// that needs a unique token. The guard is the generation, not Token.
	Token string
}

// Job is a job as stored. A running job's lease fields (LeaseToken,
// LockedBy, LeasedAt, HeartbeatAt) describe its current lease; a finished
// job, one waiting to retry a failed attempt and one made available again
// by Retry keep those of its last lease as a record until the next lease;
// release and reclaim clear them. Its JSON form is the one
// `lite show --json` prints (see MarshalJSON).
type Job struct {
	ID          int64
	Queue       string
	Kind        string
	Payload     []byte
	Priority    int
	State       State
	RunAt       time.Time
	Attempts    int
	MaxAttempts int
	// Generation counts changes of ownership. A handler can pass it to
	// external systems as a fencing token: it only ever grows.
	Generation  int64
	LeaseToken  string
	LockedBy    string // host:pid:random of the last worker; diagnostics only
	LeasedAt    time.Time
	HeartbeatAt time.Time
	UniqueKey   string
	Key         string    // see NewJob.Key
	ExpiresAt   time.Time // zero: never expires; see NewJob.ExpiresAt
	Result      []byte
	Errors      []AttemptError
	CreatedAt   time.Time
	FinishedAt  time.Time
	Tags        []string          // sorted; see NewJob.Tags
	Meta        map[string]string // see NewJob.Meta
	// Progress is the JSON value its latest run reported with SetProgress
	// or `lite progress` (a fraction 0..1, or a small JSON value), nil if
	// none did; ProgressNote is the message that came with it.
	Progress     json.RawMessage
	ProgressNote string
	// Log holds the latest lines its runs appended with Log or `lite log`:
	// at most MaxLogLines of the MaxLogBytes the job keeps. A list leaves
	// it empty when it omits bodies.
	Log []string
	// Parked says why an available job waits (see Sleep and AwaitSignal):
	// ParkedSleep, ParkedSignal (for the signal ParkedOn), or "" for a job
	// that is not parked. A lease clears it.
	Parked, ParkedOn string
	// Steps are the steps it recorded (see RunStep), its sleeps' and
	// signals' records among them: Get fills them in, a list does not.
	Steps []StepRecord
}

// AttemptError is the error recorded for one failed attempt. Attempt
// numbers start again at 1 after a Retry; Generation tells the attempts
// apart, as it only ever grows.
type AttemptError struct {
	Attempt    int       `json:"attempt"`
	Generation int64     `json:"generation"`
	At         time.Time `json:"at"`
	Error      string    `json:"error"`
}

// storedAttemptError is an AttemptError as the errors column holds it,
// with the time in unix milliseconds.
type storedAttemptError struct {
	Attempt    int    `json:"attempt"`
	Generation int64  `json:"generation"`
	At         int64  `json:"at"`
	Error      string `json:"error"`
}

// Lease returns the job's current lease, as a worker that leased it holds it.
func (j *Job) Lease() Lease {
	return Lease{JobID: j.ID, Generation: j.Generation, Attempt: j.Attempts, Token: j.LeaseToken}
}

// jobColumns is the column list scanJob reads, in its order.
const jobColumns = `id, queue, kind, payload, priority, state, run_at, attempts, max_attempts,
	generation, lease_token, locked_by, leased_at, heartbeat_at, unique_key, result, errors,
	created_at, finished_at, tags, meta, progress, progress_note, log_tail, job_key, expires_at,
	parked, parked_on`

type scanner interface{ Scan(dest ...any) error }

func scanJob(s scanner) (*Job, error) {
	var (
		j                                 Job
		runAt, createdAt                  int64
		leasedAt, heartbeatAt, finishedAt sql.NullInt64
		leaseToken, lockedBy, uniqueKey   sql.NullString
		errs, tags, meta                  string
		state                             string
		progress, note, logTail           sql.NullString
		key                               sql.NullString
		expiresAt                         sql.NullInt64
		parked, parkedOn                  sql.NullString
	)
	err := s.Scan(&j.ID, &j.Queue, &j.Kind, &j.Payload, &j.Priority, &state, &runAt,
		&j.Attempts, &j.MaxAttempts, &j.Generation, &leaseToken, &lockedBy, &leasedAt,
		&heartbeatAt, &uniqueKey, &j.Result, &errs, &createdAt, &finishedAt, &tags, &meta,
		&progress, &note, &logTail, &key, &expiresAt, &parked, &parkedOn)
	if err != nil {
		return nil, err
	}
	j.setProgress(progress, note, logTail)
	j.Parked, j.ParkedOn = parked.String, parkedOn.String
	j.State = State(state)
	j.RunAt = fromMillis(runAt)
	j.CreatedAt = fromMillis(createdAt)
	j.LeasedAt = fromNullMillis(leasedAt)
	j.HeartbeatAt = fromNullMillis(heartbeatAt)
	j.FinishedAt = fromNullMillis(finishedAt)
	j.LeaseToken = leaseToken.String
	j.LockedBy = lockedBy.String
	j.UniqueKey = uniqueKey.String
	j.Key = key.String
	j.ExpiresAt = fromNullMillis(expiresAt)
	if err := decodeMeta(&j, tags, meta); err != nil {
		return nil, err
	}
	var stored []storedAttemptError
	if err := json.Unmarshal([]byte(errs), &stored); err != nil {
		return nil, fmt.Errorf("job %d: errors column: %w", j.ID, err)
	}
	for _, e := range stored {
		j.Errors = append(j.Errors, AttemptError{Attempt: e.Attempt, Generation: e.Generation, At: fromMillis(e.At), Error: e.Error})
	}
	return &j, nil
}

func fromMillis(ms int64) time.Time { return time.UnixMilli(ms) }

func fromNullMillis(ms sql.NullInt64) time.Time {
	if !ms.Valid {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int64)
}
