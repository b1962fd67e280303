package litetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
)

// Work runs job id through w now, whatever its run_at, as a worker in
// production runs it (Worker.RunJob): its handler's CommitWithAck writes
// and SetResult's result commit with the done-ack, a Snooze or a failure
// is written under the lease. It returns the event that ended the run.
//
// A handler that fails does not fail the test: the event says so
// (EventFailed, with the handler's error in Err), for the test to
// assert on. Work fails the test at once when the job cannot run: an
// unknown id, a job that is not available, a kind w has no handler for.
//
// Call the handler through Work rather than directly: a handler called
// directly returns nil while nothing it gave CommitWithAck or SetResult
// is written.
func Work(tb testing.TB, w *lite.Worker, id int64) lite.Event {
	tb.Helper()
	ev, err := w.RunJob(tb.Context(), id)
	if err != nil {
		tb.Fatalf("litetest.Work: %v", err)
	}
	return ev
}

// drainStuck is how many batches in a row may end no job (every job
// leased was snoozed or given back) before Drain gives up.
const drainStuck = 100

// Drain runs the ready jobs w handles, a batch at a time with
// Worker.RunOnce, until a batch finds none ready, and returns the sum of
// the batches' reports. Jobs the handlers enqueue run too, if they are ready.
// Jobs that come due later (a Delay, a failure's backoff, a Snooze, a
// durable Sleep) stay where they are: move the Clock and Drain again. A
// job parked by AwaitSignal is ready once Queue.Signal sends it one.
//
// Drain fails the test at once on an error (w is running, has no
// handlers, the file cannot be written), and when 100 batches in a row
// end no job: a handler that snoozes for no time would never let it end.
//
// It also fails when it stops with jobs ready that a queue's rate limit
// keeps from starting (Limits.Rate per Per, spent in this window): the
// message names each such queue, its limit and when its next window
// opens. Drain does not move the Clock itself, since the test owns it:
// move it to that time and Drain again, or give the queue a rate the
// test does not reach. A paused queue's jobs are left alone: the pause
// says why.
func Drain(tb testing.TB, w *lite.Worker) lite.Report {
	tb.Helper()
	var sum lite.Report
	stuck := 0
	for {
		rep, err := w.RunOnce(tb.Context())
		if err != nil {
			tb.Fatalf("litetest.Drain: %v", err)
			return sum
		}
		if rep.Leased == 0 {
			rateHeld(tb, w, sum)
			return sum
		}
		sum = add(sum, rep)
		if rep.Done+rep.Failed > 0 {
			stuck = 0
		} else if stuck++; stuck == drainStuck {
			tb.Fatalf("litetest.Drain: %d batches in a row ended no job, every one snoozed or given back; "+
				"a handler that snoozes for no time never drains (so far: %+v)", drainStuck, sum)
			return sum
		}
	}
}

// rateHeld fails the test if ready jobs of w's wait for a rate window.
func rateHeld(tb testing.TB, w *lite.Worker, sum lite.Report) {
	tb.Helper()
	held, err := w.RateHeld(tb.Context())
	if err != nil {
		tb.Fatalf("litetest.Drain: %v", err)
		return
	}
	if len(held) == 0 {
		return
	}
	why := make([]string, len(held))
	for i, h := range held {
		why[i] = fmt.Sprintf("queue %q started its %d per %s (lite.Limits.Rate) and opens its next window at %s",
			h.Queue, h.Rate, h.Per, h.OpensAt.UTC().Format(time.RFC3339Nano))
	}
	tb.Fatalf("litetest.Drain: ready jobs wait for a rate limit: %s; advance the Clock to that time and Drain again "+
		"(so far: %+v)", strings.Join(why, "; "), sum)
}

// add sums two reports, field by field.
func add(a, b lite.Report) lite.Report {
	return lite.Report{
		Leased:    a.Leased + b.Leased,
		Done:      a.Done + b.Done,
		Failed:    a.Failed + b.Failed,
		Snoozed:   a.Snoozed + b.Snoozed,
		Parked:    a.Parked + b.Parked,
		Released:  a.Released + b.Released,
		LeaseLost: a.LeaseLost + b.LeaseLost,
	}
}
