package lite_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// runUntilIdle runs w, which must have StopWhenIdle, and fails the test
// unless Run returns by itself.
func runUntilIdle(t *testing.T, w *lite.Worker) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- w.Run(t.Context()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(guard):
		t.Fatal("the worker did not stop once nothing was startable")
	}
}

// count is how many events of kind ev saw.
func count(ev *events, kind lite.EventKind) int {
	n := 0
	for _, e := range ev.seen() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

func TestStopWhenIdleStopsOnceNothingIsStartableNow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for name, setup := range map[string]func(t *testing.T, q *lite.Queue, clock *fakeClock) lite.NewJob{
			"a job due in an hour": func(t *testing.T, q *lite.Queue, clock *fakeClock) lite.NewJob {
				return lite.NewJob{Queue: "q", RunAt: clock.Now().Add(time.Hour)}
			},
			"a paused queue's job": func(t *testing.T, q *lite.Queue, clock *fakeClock) lite.NewJob {
				if err := q.Pause(t.Context(), "q"); err != nil {
					t.Fatal(err)
				}
				return lite.NewJob{Queue: "q"}
			},
		} {
			t.Run(name+" does not keep it running", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, setup(t, q, clock))
				w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
				w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
				runUntilIdle(t, w)
				is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
			})
		}

		t.Run("a job waiting out its retry backoff does not keep it running", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 5})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return errors.New("no") })
			runUntilIdle(t, w)
			is.Equal(count(ev, lite.EventFailed), 1) // one attempt, then the backoff
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Attempts, 1)
		})

		t.Run("jobs a rate limit holds back do not keep it running", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Rate: 2, Per: time.Hour}))
			for range 5 {
				mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			}
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			runUntilIdle(t, w)
			is.Equal(count(ev, lite.EventDone), 2) // the rate's two, then nothing startable
		})

		t.Run("a job running in another process keeps it running until that job ends", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			elsewhere := mustLeaseOne(t, q, "q") // it may fail and come back, or its worker die
			w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			done := make(chan error, 1)
			go func() { done <- w.Run(t.Context()) }()
			time.Sleep(200 * time.Millisecond) // a chance for a wrong stop to show itself
			select {
			case <-done:
				t.Fatal("stopped while a job of its queues was running")
			default:
			}
			is.NoErr(q.AckDone(t.Context(), elsewhere.Lease(), nil))
			select {
			case err := <-done:
				is.NoErr(err)
			case <-time.After(guard):
				t.Fatal("did not stop once the job ended")
			}
		})

		t.Run("it stops once its last jobs die while its slots are not all busy", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
			mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true, Concurrency: 4})
			both := make(chan struct{}, 2)
			w.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
				both <- struct{}{}
				for len(both) < 2 {
					time.Sleep(time.Millisecond) // both run at once, so the loop waits with slots free
				}
				return errors.New("no")
			})
			runUntilIdle(t, w)
			is.Equal(count(ev, lite.EventFailed), 2) // each its one attempt, dead
		})

		t.Run("it runs every startable job before it stops", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			for range 20 {
				mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			}
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true, Concurrency: 3})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			runUntilIdle(t, w)
			is.Equal(count(ev, lite.EventDone), 20)
		})
	})
}

func TestAFailedLeaseRetriesAfterTheDelayItLogs(t *testing.T) {
	is := is.New(t)
	q, _ := mustOpen(t, newFakeClock())
	// Every lease fails as on a full disk, while enqueues (inserts) commit
	// and wake the worker, as the failed commit's own WAL write did.
	_, err := lite.WriterDB(q).ExecContext(t.Context(),
		`create trigger full_disk before update on lite_jobs begin select raise(abort, 'database or disk is full'); end`)
	is.NoErr(err)
	w, _, logs := testWorker(t, q, lite.WorkerOptions{})
	waits := make(chan time.Duration)
	fire := make(chan time.Time)
	lite.SetAfter(w, func(d time.Duration) <-chan time.Time {
		waits <- d
		return fire
	})
	w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
	mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	runWorker(t, w)

	var asked []time.Duration
	for i := range 4 {
		asked = append(asked, recv(t, waits))
		// Commits while it waits must not bring the retry forward.
		for range 10 {
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		}
		time.Sleep(50 * time.Millisecond) // a chance for a woken lease to show itself
		is.Equal(strings.Count(logs.String(), "lease failed"), i+1)
		fire <- time.Time{}
	}
	is.Equal(asked, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond})
	is.True(strings.Contains(logs.String(), "in=800ms")) // the wait it logs is the wait it takes
}

// TestStopWhenIdleStopsWhenTheLastSlotFreesAfterARound fails a job, its
// retry an hour off, and holds the handler's slot until the worker has
// made a round of leases after the failure committed (the slot still
// busy, so not idle): the freed slot must wake the worker to look again
// and stop. It waited for a commit or the retry instead, so it ran the
// job again after its backoff, or (the clock still) never stopped.
func TestStopWhenIdleStopsWhenTheLastSlotFreesAfterARound(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{Kind: "flaky"})
		rounds := make(chan struct{}, 1)
		w, err := lite.NewWorker(q, lite.WorkerOptions{StopWhenIdle: true, OnEvent: func(ev lite.Event) {
			if ev.Kind != lite.EventFailed {
				return
			}
			select { // the next round, made while this slot is busy
			case <-rounds:
			case <-time.After(time.Second):
			}
		}})
		is.New(t).NoErr(err)
		lite.SetIdleHook(w, func() {
			select {
			case rounds <- struct{}{}:
			default:
			}
		})
		w.Handle("flaky", func(ctx context.Context, j *lite.Job) error {
			<-rounds // the rounds before the failure do not count
			return errors.New("flaky")
		})
		runUntilIdle(t, w)
		is.New(t).Equal(mustGet(t, q, 1).State, lite.StateAvailable)
	})
}

// A sequence's next job is held back while its key's job runs; the round
// that read the next run time saw it held. Once that job ends (before the
// idle check, here on purpose), the next job is startable, and a worker
// stopping when idle must look again rather than stop with it left.
func TestStopWhenIdleRunsASequenceToItsEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceContinue}))
		ids := enqueueKeyed(t, q, "k", "k", "k", "k", "k", "k")
		ended := make(chan struct{}, len(ids))
		w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 4, StopWhenIdle: true, OnEvent: func(ev lite.Event) {
			if ev.Kind == lite.EventDone {
				ended <- struct{}{}
			}
		}})
		is.NoErr(err)
		started := make(chan struct{}, len(ids))
		rounds := 0
		lite.SetIdleHook(w, func() {
			if rounds++; rounds <= len(ids) { // each round leases the key's next job: it ends before the idle check
				<-started
				<-ended
			}
		})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			started <- struct{}{}
			return nil
		})
		runUntilIdle(t, w)
		for _, id := range ids {
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		}
	})
}

func TestStopWhenIdleDrainsAChainEachJobOfWhichItsOwnAckMadeAvailable(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		const n = 60
		prev := mustEnqueue(t, q, lite.NewJob{Kind: "link"})
		for range n - 1 {
			prev = mustEnqueue(t, q, lite.NewJob{Kind: "link", DependsOn: []int64{prev}})
		}
		w, err := lite.NewWorker(q, lite.WorkerOptions{StopWhenIdle: true, Concurrency: 4})
		is.NoErr(err)
		w.Handle("link", func(context.Context, *lite.Job) error { return nil })
		runUntilIdle(t, w)
		is.Equal(stateOf(t, q, prev), lite.StateDone) // the last link ran: none was left available
	})
}

func TestStopWhenIdleWaitsForWhatItsBlockedJobsWaitFor(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// leaseKind leases the one available job of kind, as a worker of
		// that kind elsewhere would.
		leaseKind := func(t *testing.T, q *lite.Queue, kind string) *lite.Job {
			t.Helper()
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Kinds: []string{kind}})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("lease %s: %v, %d jobs", kind, err, len(jobs))
			}
			return jobs[0]
		}
		// start runs a worker of kind "a" that stops when idle, and fails
		// the test if it stops within a moment.
		start := func(t *testing.T, q *lite.Queue) <-chan error {
			t.Helper()
			w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
			w.Handle("a", func(context.Context, *lite.Job) error { return nil })
			done := make(chan error, 1)
			go func() { done <- w.Run(t.Context()) }()
			time.Sleep(200 * time.Millisecond) // a chance for a wrong stop to show itself
			select {
			case <-done:
				t.Fatal("stopped while a job its blocked job waits for was running")
			default:
			}
			return done
		}
		stopped := func(t *testing.T, done <-chan error) {
			t.Helper()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(guard):
				t.Fatal("did not stop once its work was done")
			}
		}

		t.Run("a dependency of another kind running elsewhere keeps it running until its dependent has run", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			dep := mustEnqueue(t, q, lite.NewJob{Kind: "b"})
			mine := mustEnqueue(t, q, lite.NewJob{Kind: "a", DependsOn: []int64{dep}})
			elsewhere := leaseKind(t, q, "b")
			done := start(t, q)
			is.NoErr(q.AckDone(t.Context(), elsewhere.Lease(), nil))
			stopped(t, done)
			is.Equal(stateOf(t, q, mine), lite.StateDone)
		})

		t.Run("so does one its blocked job waits for through a blocked job of another kind", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			first := mustEnqueue(t, q, lite.NewJob{Kind: "c"})
			between := mustEnqueue(t, q, lite.NewJob{Kind: "b", DependsOn: []int64{first}})
			mine := mustEnqueue(t, q, lite.NewJob{Kind: "a", DependsOn: []int64{between}})
			elsewhere := leaseKind(t, q, "c")
			done := start(t, q)
			is.NoErr(q.AckDone(t.Context(), elsewhere.Lease(), nil))
			is.NoErr(q.AckDone(t.Context(), leaseKind(t, q, "b").Lease(), nil))
			stopped(t, done)
			is.Equal(stateOf(t, q, mine), lite.StateDone)
		})

		t.Run("another kind's blocked job does not keep it running", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			dep := mustEnqueue(t, q, lite.NewJob{Kind: "b"})
			theirs := mustEnqueue(t, q, lite.NewJob{Kind: "z", DependsOn: []int64{dep}})
			leaseKind(t, q, "b")
			w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
			w.Handle("a", func(context.Context, *lite.Job) error { return nil })
			runUntilIdle(t, w)
			is.Equal(stateOf(t, q, theirs), lite.StateBlocked)
		})

		// A dependency nobody may start now (its queue paused, or out of
		// starts for its rate window) is not startable work: waiting for
		// it would hang the worker until an operator resumes the queue.
		for held, set := range map[string]func(q *lite.Queue) error{
			"paused": func(q *lite.Queue) error { return q.Pause(t.Context(), "theirs") },
			"out of its rate": func(q *lite.Queue) error {
				return q.SetLimits(t.Context(), "theirs", lite.Limits{Rate: 1, Per: time.Hour})
			},
		} {
			t.Run("a dependency in a queue "+held+" does not keep it running", func(t *testing.T) {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				is.NoErr(set(q))
				if held == "out of its rate" {
					mustEnqueue(t, q, lite.NewJob{Queue: "theirs", Kind: "b"})
					leaseKind(t, q, "b") // the window's one start
				}
				dep := mustEnqueue(t, q, lite.NewJob{Queue: "theirs", Kind: "b"})
				mine := mustEnqueue(t, q, lite.NewJob{Kind: "a", DependsOn: []int64{dep}})
				w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: true})
				w.Handle("a", func(context.Context, *lite.Job) error { return nil })
				runUntilIdle(t, w)
				is.Equal(stateOf(t, q, mine), lite.StateBlocked)
			})
		}
	})
}
