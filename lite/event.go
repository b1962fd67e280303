package lite

import (
	"encoding/json"
	"time"
)

// EventKind names what happened to a job in a worker.
type EventKind string

// The events a worker reports through WorkerOptions.OnEvent.
const (
	EventStarted   EventKind = "started"    // a handler began
	EventDone      EventKind = "done"       // acked done
	EventFailed    EventKind = "failed"     // attempt failed: retry later, or dead
	EventSnoozed   EventKind = "snoozed"    // given back to run later, no attempt spent
	EventParked    EventKind = "parked"     // sleeping, awaiting a signal or jobs (Sleep, AwaitSignal, Await), no attempt spent
	EventReleased  EventKind = "released"   // given back at shutdown, no attempt spent
	EventReclaimed EventKind = "reclaimed"  // taken back from a worker whose heartbeat lapsed
	EventLeaseLost EventKind = "lease lost" // the lease was gone; the handler's outcome was skipped

	// A handler's durable calls, reported while it runs (State running).
	EventStep           EventKind = "step"            // a step's fn ran and its result is the step's record (RunStep, RunStepTx)
	EventStepReplayed   EventKind = "step replayed"   // a step returned its record without running fn again
	EventSignalReceived EventKind = "signal received" // AwaitSignal took a signal sent to the job
)

// Why says why a job failed (EventFailed) or why its worker lost the lease
// (EventLeaseLost), so that an application can act on the outcome: mark an
// order failed, alert on reclaims, stop work on a cancelled job.
type Why string

// Why an attempt failed: Event.Why of EventFailed, and Failure.Why.
const (
	// WhyRetryLater: the attempt failed and the job has attempts left; it
	// is available again at NextRunAt, after Options.Backoff.
	WhyRetryLater Why = "retry later"
	// WhyAttemptsSpent: the job failed its last attempt and is dead.
	WhyAttemptsSpent Why = "attempts spent"
	// WhyPermanent: the error was marked Permanent (a payload that does
	// not decode, a kind no handler knows, a result too large to store),
	// so the job is dead whatever attempts it had left.
	WhyPermanent Why = "permanent"
	// WhyFailureWritesFailed: the failure is recorded (State says whether
	// the job retries or is dead) but the handler's CommitWithFailure
	// writes failed, so none of them committed; Err joins the attempt's
	// error with theirs, and the worker logs it at Error level.
	WhyFailureWritesFailed Why = "failure writes failed"
	// WhyUnrecorded: the write that settles the run failed (the file's
	// lock held past every retry, a full disk), so nothing was written.
	// The job stays running under the lease until its heartbeat lapses;
	// then a reclaim runs it again. Err is the write's error.
	WhyUnrecorded Why = "unrecorded"
)

// Why a lease was lost: Event.Why of EventLeaseLost, and LeaseLostError.Why.
// Except for WhyAbandoned, they are read from the job's row when an owner
// write finds its lease gone; lite records in the job's errors log each
// way a lease is taken from a running job (see Job.Errors and `lite show`).
const (
	// WhyCancelled: Cancel (`lite cancel`) ended the job while it ran.
	WhyCancelled Why = "cancelled"
	// WhyReclaimed: the lease's heartbeat lapsed past its StaleAfter and a
	// reclaim took the job back: the worker stalled, or lost the file.
	WhyReclaimed Why = "reclaimed"
	// WhyReleased: ReleaseUnowned (`lite release`, "run it again now")
	// made the job available again while this lease held it.
	WhyReleased Why = "released"
	// WhyDeleted: the job is gone: it was finished by another lease or an
	// admin, then purged.
	WhyDeleted Why = "deleted"
	// WhySuperseded: the job's generation moved past this lease and no
	// record says how: code other than the worker gave the job back under
	// this same lease (Release, Snooze, Fail) and it may have been leased
	// again, or a lite from before these records released it. State and
	// CurrentGeneration say where it is now; running means someone holds
	// a newer lease.
	WhySuperseded Why = "superseded"
	// WhyAlreadySettled: this lease already wrote the job's outcome; the
	// write that found it gone was a second one under the same lease.
	WhyAlreadySettled Why = "already settled"
	// WhyAbandoned: this worker let the lease go itself, at shutdown,
	// because the handler ignored its cancellation past the grace.
	WhyAbandoned Why = "abandoned"
)

// Event is one thing that happened to one job in a worker.
type Event struct {
	Kind  EventKind
	JobID int64
	// Job is the job as leased; nil for EventReclaimed.
	Job *Job
	// Generation is the lease's generation; for EventReclaimed, the
	// job's new one.
	Generation int64
	// CurrentGeneration, for EventLeaseLost, is the job's generation when
	// the loss was seen (0 if the job is gone).
	CurrentGeneration int64
	// State is the job's state after the event: running for EventStarted
	// and a handler's durable calls, done for EventDone, available or dead
	// for EventFailed and EventReclaimed (running when the failure could
	// not be recorded), available for EventSnoozed and EventReleased,
	// available or blocked for EventParked. For EventLeaseLost it is the
	// state the job was found in, or "" if it is gone or could not be
	// read.
	State State
	// NextRunAt is when the job may run next, when State is available:
	// after its backoff for EventFailed, after the delay for EventSnoozed,
	// and the moment of the event for EventReleased and EventReclaimed,
	// which give the job back to run at once. Zero otherwise.
	NextRunAt time.Time
	// Why is why the attempt failed, for EventFailed, why the lease was
	// lost, for EventLeaseLost, or what the job waits for, for
	// EventParked (ParkedSleep, ParkedSignal or ParkedAwait); empty for
	// the other kinds.
	Why Why
	// Err is the handler's error for EventFailed (joined with the failure
	// writes' error under WhyFailureWritesFailed, or the write's error
	// under WhyUnrecorded), and a *LeaseLostError for EventLeaseLost.
	Err error
	// Elapsed is how long the handler ran, for the events that end a run.
	Elapsed time.Duration
}

// eventJSON is an Event in lite's JSON conventions.
type eventJSON struct {
	Kind              EventKind  `json:"kind"`
	JobID             int64      `json:"job_id"`
	Generation        int64      `json:"generation"`
	CurrentGeneration int64      `json:"current_generation,omitempty"`
	State             State      `json:"state"`
	NextRunAt         *time.Time `json:"next_run_at,omitempty"`
	Why               Why        `json:"why,omitempty"`
	Error             *string    `json:"error,omitempty"`
	ElapsedMS         int64      `json:"elapsed_ms"`
	Job               *Job       `json:"job,omitempty"`
}

// MarshalJSON writes the event in the shape `lite --json` uses: snake_case
// names, times in UTC, the error as text, Elapsed in whole milliseconds as
// elapsed_ms, and the job in its own JSON shape. Fields that do not apply
// (current_generation, next_run_at, why, error, job) are left out.
func (e Event) MarshalJSON() ([]byte, error) {
	out := eventJSON{
		Kind: e.Kind, JobID: e.JobID, Generation: e.Generation, CurrentGeneration: e.CurrentGeneration,
		State: e.State, Why: e.Why, ElapsedMS: e.Elapsed.Milliseconds(), Job: e.Job,
	}
	if !e.NextRunAt.IsZero() {
		t := e.NextRunAt.UTC()
		out.NextRunAt = &t
	}
	if e.Err != nil {
		s := e.Err.Error()
		out.Error = &s
	}
	return json.Marshal(out)
}
