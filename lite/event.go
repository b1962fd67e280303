package lite

import "time"

// EventKind names what happened to a job in a worker.
type EventKind string

// The events a worker reports through WorkerOptions.OnEvent.
const (
	EventStarted   EventKind = "started"    // a handler began
	EventDone      EventKind = "done"       // acked done
	EventFailed    EventKind = "failed"     // attempt failed: retry later, or dead
	EventSnoozed   EventKind = "snoozed"    // given back to run later, no attempt spent
	EventReleased  EventKind = "released"   // given back at shutdown, no attempt spent
	EventReclaimed EventKind = "reclaimed"  // taken back from a worker whose heartbeat lapsed
	EventLeaseLost EventKind = "lease lost" // the lease was gone; the handler's outcome was skipped
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
	// Err is the handler's error for EventFailed, and the ack's for
	// EventLeaseLost.
	Err error
	// Elapsed is how long the handler ran, for the events that end a run.
	Elapsed time.Duration
}
