// Package lite is a durable job queue in one SQLite file (or on a
// PostgreSQL server), safe under failure: a worker that stalled, crashed
// or was force-released can never overwrite the work of the worker that
// took its job after it.
//
// Each section below names the examples that show it; they are compiled
// and their output checked by go test, and pkg.go.dev shows them beside
// the functions they are named for.
//
// # A queue
//
// [Open] opens (and creates, or migrates) a queue on a file, or on a
// PostgreSQL URL when the program imports the engine,
// github.com/liteq/lite/lite/pg. [New] takes a *sql.DB of your own.
// [Options] are given by value, and the zero value of each field is its
// default.
//
// # Jobs with typed arguments
//
// A job's kind is bound to a Go type once ([Args]): the type's JSON is the
// payload and its Kind method names the kind, so enqueue and handler can
// never disagree on a name. A type that also has a JobDefaults method
// ([ArgsWithDefaults]) gives its kind a queue, a priority, a number of
// attempts or a unique key; a [NewJob] passed to [EnqueueArgs] overrides
// them field by field. [Queue.Enqueue] takes a kind and raw payload bytes,
// for tools and shells. See ExampleEnqueueArgs.
//
// # Enqueueing in your own transaction
//
// The queue's file can hold your application's tables too. Begin a
// transaction on [Queue.DB], write your rows, and enqueue in the same
// transaction with [EnqueueArgsTx], [Queue.EnqueueTx] or
// [Queue.EnqueueBatchTx] ([JobOf] turns typed args into a NewJob for a
// batch): the jobs exist if and only if your rows commit. [ErrDuplicate]
// (a unique key already held) leaves the transaction usable. See
// ExampleQueue_EnqueueTx.
//
// On PostgreSQL your tables share the queue's schema the same way. Write
// your SQL once for both engines: pass queries written with ? through
// Queue.Rebind, and create each table's id column as Queue.Engine says
// (`integer primary key` on SQLite, `bigint generated always as identity
// primary key` on PostgreSQL), with bigint for other integer columns.
// examples/webhooks runs on both.
//
// # Workers
//
// A [Worker] leases jobs, runs their handlers ([Worker.Handle], or
// [HandleArgs] for a typed kind) and records each outcome; [Worker.Run]
// runs until its context ends, then shuts down gracefully. Each queue in
// [WorkerOptions].Queues has slots of its own, so a backlog in one never
// delays another. A handler's nil error acks the job done; an error fails
// the attempt, and the job runs again after [Options].Backoff until its
// attempts are spent, then it is dead. [Permanent] makes it dead at once;
// returning [Snooze], even wrapped, runs it again later without spending an
// attempt. When the worker shuts down, a handler whose context ended with
// [ErrShutdown] gives its job back (released, no attempt spent), whatever
// it returns. See ExampleHandleArgs.
//
// Running workers announce their queues and kinds in the file; ready jobs
// that no running worker takes (a misspelled kind, a queue nobody serves)
// are listed by [Queue.Unhandled] and `lite workers`, and warned about by
// the workers that see them.
//
// # Outcomes that commit with your rows
//
// A handler's own writes to the queue's file can commit in the same
// transaction as the job's outcome, fenced by its lease: [CommitWithAck]
// for success (with [SetResult] for the result), [CommitWithFailure] for a
// failed attempt, which is told whether the job will be retried and when,
// or is dead. Either the outcome and the rows commit, or neither, and never
// for a worker that lost its lease. Code that leases by hand
// ([Queue.Lease], [Queue.Renew]) uses [Queue.Complete] and [Queue.Fail] the
// same way. [WorkerOptions].OnEvent reports every outcome with the job's
// new state, its next run time and why. See ExampleCommitWithAck,
// ExampleCommitWithFailure and ExampleQueue_Complete.
//
// # Fencing
//
// Every job carries a generation counter. Each change of ownership (lease,
// release, snooze, reclaim, cancel of a running job) bumps it, and a lease
// is the pair (job id, generation). Every write a lease holder makes
// (Renew, AckDone, AckDoneMany, AckFailed, Fail, Release, Snooze, Complete)
// matches
//
//	where id = ? and generation = ? and state = 'running'
//
// and checks the rows it touched: zero means the lease is gone, the call
// returns [ErrLeaseLost] (a [*LeaseLostError] saying why), and nothing
// changed. Workers keep leases alive with heartbeats; a lease whose
// heartbeat lapsed past its owner's StaleAfter is taken back by any
// process ([Queue.ReclaimOrphaned]), never a long job that keeps beating.
// A handler can pass [Job].Generation to systems downstream as a fencing
// token: it only ever grows.
//
// # Running for months unattended
//
// Schedules, flow control and retention are state in the file, so every
// process sharing it agrees without a leader. [Queue.SetSchedule] is an
// upsert by name, so a program registers its schedules at every start;
// every running Worker fires those that are due, and a tick is enqueued
// exactly once however many processes run, because the fire is a
// compare-and-set on the schedule's next run time in the enqueue's
// transaction. Ticks missed while nothing ran are caught up once.
// [Queue.Pause] and [Queue.SetLimits] are enforced inside the statements
// that lease, and a running slot belongs to a lease: a killed worker's
// slots come back when its jobs are reclaimed. Every Worker deletes
// finished jobs past their state's retention ([Queue.SetRetention]) in
// small batches, and a file lite created gives the space back. See
// ExampleQueue_SetSchedule, ExampleQueue_SetLimits and ExampleQueue_Pause.
//
// # Testing
//
// Package github.com/liteq/lite/lite/litetest opens a queue in a test's
// temporary directory with a fake clock, asserts what was enqueued (inside
// or outside a transaction), and runs one job, or every ready job, through
// a real Worker, so that CommitWithAck, SetResult and snoozes behave in a
// test as in production. Its examples show a whole test.
//
// What counts as lapsed, due or expired is read from one clock,
// [Options].Now, so tests make heartbeats lapse and jobs come due with a
// fake clock, calling [Worker.Heartbeat] and [Worker.Reclaim] themselves.
// The intervals at which a running Worker beats, reclaims and polls,
// handler timeouts and the shutdown grace are real-time durations.
//
// The guides in the repository's docs/ folder (library, PostgreSQL,
// schedules, limits, retention, fencing) say more.
package lite
