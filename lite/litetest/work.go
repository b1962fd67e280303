package litetest

import (
	"testing"

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
// Jobs that come due later (a Delay, a failure's backoff, a Snooze) stay
// where they are: move the Clock and Drain again.
//
// Drain fails the test at once on an error (w is running, has no
// handlers, the file cannot be written), and when 100 batches in a row
// end no job: a handler that snoozes for no time would never let it end.
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

// add sums two reports, field by field.
func add(a, b lite.Report) lite.Report {
	return lite.Report{
		Leased:    a.Leased + b.Leased,
		Done:      a.Done + b.Done,
		Failed:    a.Failed + b.Failed,
		Snoozed:   a.Snoozed + b.Snoozed,
		Released:  a.Released + b.Released,
		LeaseLost: a.LeaseLost + b.LeaseLost,
	}
}
