package lite

import "errors"

// Errors a caller can test for with errors.Is.
var (
	// ErrLeaseLost means the caller's lease (job id and generation) is no
	// longer the job's current lease: it was released, reclaimed, cancelled
	// or already acknowledged. The write that returned it changed nothing.
	ErrLeaseLost = errors.New("lease lost")
	// ErrNotFound means no job has the given id.
	ErrNotFound = errors.New("job not found")
	// ErrDuplicate means an unfinished job with the same unique key already
	// exists in the queue; the call that returned it also returns that
	// job's id.
	ErrDuplicate = errors.New("duplicate unique key")
	// ErrInvalidState means the job exists but its state does not allow the
	// operation (retrying a running job, cancelling a done one).
	ErrInvalidState = errors.New("invalid job state")
	// ErrTooLarge means a payload or result is over Options.MaxPayloadBytes.
	ErrTooLarge = errors.New("too large")
	// ErrNotLite means the file is not a SQLite database, or holds tables
	// named like lite's that lite did not create. Open leaves it untouched.
	ErrNotLite = errors.New("not a lite database")
	// ErrSchemaTooNew means the file was migrated by a newer lite. Open
	// leaves it untouched.
	ErrSchemaTooNew = errors.New("schema is newer than this lite")
	// ErrBusy means another connection held the file's write lock for
	// longer than Options.BusyTimeout. Nothing was written; retrying later
	// is safe. Workers retry by themselves.
	ErrBusy = errors.New("database busy")
	// ErrFull means the disk (or the file's max_page_count) is full.
	// Nothing was written; retry once there is room.
	ErrFull = errors.New("database full")
	// ErrReadOnly means lite may not write the file: it, its directory or
	// its mount is read-only, or the process lacks permission (on a
	// server: a read-only transaction or a missing privilege). Nothing was
	// written; waiting does not clear it.
	ErrReadOnly = errors.New("database read-only")
	// ErrNoSchedule means no schedule has the given name.
	ErrNoSchedule = errors.New("no such schedule")
	// ErrInvalid means a setting was refused as given (bad limits, a bad
	// retention, a schedule's spec or zone that does not parse, a queue
	// name lite does not take); nothing changed. It
	// is the caller's mistake, where the other errors are the database's.
	ErrInvalid = errors.New("invalid setting")
	// ErrWorkersRunning means Vacuum found live workers announced in the
	// file and left it as it was: the rewrite would hold the write lock
	// long enough for their leases to lapse and their jobs to run twice.
	// Stop them, or pass VacuumOptions.Force.
	ErrWorkersRunning = errors.New("workers are running")
	// ErrInUse means Restore found the file it would replace open in
	// another process, which would go on writing to the replaced file.
	ErrInUse = errors.New("database in use")
	// ErrClockBehind means FenceRestore found an id or generation at or
	// above the floor it derives from the clock: the clock is behind an
	// earlier restore's. Nothing changed; set the clock right and rerun.
	ErrClockBehind = errors.New("clock behind an earlier restore")
	// ErrAfterCommit means a write (an enqueue, an ack, an admin's cancel
	// or retry...) committed, but the wait Options.AfterCommit adds after
	// the commit (for the replica) failed: the write is in the file, and
	// not known to be anywhere else. Retrying an enqueue would add the job
	// twice; retrying an ack would find its lease gone.
	ErrAfterCommit = errors.New("after commit")
)

// codeError adds one of lite's sentinels to an error without changing
// its message.
type codeError struct {
	err  error
	kind error
}

func (e codeError) Error() string   { return e.err.Error() }
func (e codeError) Unwrap() []error { return []error{e.err, e.kind} }

// permanentError marks a handler error that retrying cannot fix.
type permanentError struct{ err error }

func (p permanentError) Error() string { return p.err.Error() }
func (p permanentError) Unwrap() error { return p.err }

// Permanent wraps err so that AckFailed sends the job straight to dead,
// whatever attempts it has left.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or any error it wraps, was marked with
// Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// leaseLost is the error of l's guard matching no row, before anything
// is read of how the lease ended: a *LeaseLostError with the lease alone,
// so that a handler's context cancelled with it as its cause gives a
// cause that errors.As finds as one, as an ack's error does.
func leaseLost(l Lease) error {
	return &LeaseLostError{JobID: l.JobID, Generation: l.Generation}
}
