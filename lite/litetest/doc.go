// Package litetest tests code that uses lite, through lite's own
// machinery: a queue in a temporary file, assertions on what was
// enqueued, handlers run as a worker runs them, and a clock the test
// moves. It imports lite and the standard library only; lite never
// imports it.
//
// # A queue per test
//
// Open gives each test a queue on a new file, closed when the test ends:
//
//	q := litetest.Open(t)
//
// # What was enqueued
//
// RequireEnqueued finds the jobs of an args type's kind and requires
// exactly one, with the args given (compared as JSON, through the type);
// RequireEnqueuedMany requires several, in the order they were enqueued;
// RequireNotEnqueued requires none. Opts narrows any of them to one
// queue, and Opts.Among looks for the wanted jobs among others of the
// kind, for a file that holds more than the test made. A failure lists
// every job of the kind found, with its args.
//
//	signup(ctx, q, "ada@example.com") // the code under test
//	litetest.RequireEnqueued(t, q, Welcome{To: "ada@example.com"})
//	litetest.RequireNotEnqueued[Invoice](t, q)
//
// The ...Tx forms read through your transaction, before it commits:
//
//	tx, _ := q.DB().BeginTx(ctx, nil)
//	lite.EnqueueArgsTx(ctx, q, tx, Welcome{To: "ada@example.com"})
//	litetest.RequireEnqueuedTx(t, tx, Welcome{To: "ada@example.com"})
//
// # Running handlers
//
// Work runs one job's real handler through a Worker, as production runs
// it: what the handler gives CommitWithAck and SetResult is written with
// its ack, a Snooze or a failure under its lease. Calling the handler
// directly skips all of that, and a test passes while nothing is written.
// Work returns the event that ended the run; Drain runs every ready job
// until none is left and returns what it did; it fails, naming the
// limit, when a queue's rate limit keeps ready jobs from starting.
//
//	w, _ := lite.NewWorker(q, lite.WorkerOptions{})
//	lite.HandleArgs(w, sendWelcome)
//	ev := litetest.Work(t, w, id) // ev.Kind == lite.EventDone
//	rep := litetest.Drain(t, w)   // rep.Done == jobs that were ready
//
// # Time
//
// A Clock is a fake lite.Options.Now that moves only when the test moves
// it. Open installs none, so a queue keeps real time unless you pass one;
// with one, scheduled jobs, backoffs and snoozes come due exactly when the
// test says:
//
//	clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
//	q := litetest.Open(t, lite.Options{Now: clock.Now})
//	// ... a handler snoozes for an hour ...
//	litetest.Drain(t, w)        // runs nothing: the job is not due
//	clock.Advance(time.Hour)
//	litetest.Drain(t, w)        // runs it
package litetest
