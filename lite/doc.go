// Package lite is a durable job queue in one SQLite file, safe under
// failure: a worker that stalled, crashed or was force-released can never
// overwrite the work of the worker that took its job after it.
//
// # Fencing
//
// Every job carries a generation counter. Each change of ownership (lease,
// release, snooze, reclaim, cancel of a running job) bumps it, and a lease
// is the pair (job id, generation). Every write a lease holder makes (Renew,
// AckDone, AckDoneMany, AckFailed, Release, Snooze, Complete) matches
//
//	where id = ? and generation = ? and state = 'running'
//
// and checks the rows it touched: zero means the lease is gone, the call
// returns ErrLeaseLost, and nothing changed. Workers keep leases alive with
// heartbeats (Renew); ReclaimOrphaned takes back only jobs whose heartbeat
// lapsed, never a long job that keeps beating.
//
// # Using it
//
// Open a queue on a file, Enqueue jobs, and let workers Lease, Renew and
// acknowledge them. Jobs written inside your own transaction (EnqueueTx)
// exist exactly when your data commits, and Complete commits a handler's
// own writes to the same file together with its ack, or neither.
//
// What counts as lapsed, due or expired is read from one clock,
// Options.Now, so tests make heartbeats lapse and jobs come due with a fake
// clock, calling Worker.Heartbeat and Worker.Reclaim themselves. The
// intervals at which a running Worker beats, reclaims and polls, handler
// timeouts and the shutdown grace are real-time durations.
package lite
