package lite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// guard bounds every wait for something asynchronous: a failing test
// stops here instead of hanging. Nothing is timed against it. The
// mutation check (.ci/mutation) shortens it with LITE_TEST_GUARD: a
// mutant's killing test that waits it out is most of that mutant's time,
// and what comes at all comes in milliseconds.
var guard = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("LITE_TEST_GUARD")); err == nil && d > 0 {
		return d
	}
	return 20 * time.Second
}()

// recv takes one value from ch, failing the test if none comes.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatal("nothing received")
		panic("unreachable")
	}
}

// syncBuffer is a log sink that handlers on many goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// events records a worker's events and lets a test wait for one.
type events struct {
	mu  sync.Mutex
	all []lite.Event
	ch  chan lite.Event
}

func newEvents() *events { return &events{ch: make(chan lite.Event, 1000)} }

func (e *events) record(ev lite.Event) {
	e.mu.Lock()
	e.all = append(e.all, ev)
	e.mu.Unlock()
	e.ch <- ev
}

// seen is every event recorded so far, in order.
func (e *events) seen() []lite.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]lite.Event(nil), e.all...)
}

// await returns the next event of kind, skipping others.
func (e *events) await(t *testing.T, kind lite.EventKind) lite.Event {
	t.Helper()
	timeout := time.After(guard)
	for {
		select {
		case ev := <-e.ch:
			if ev.Kind == kind {
				return ev
			}
		case <-timeout:
			t.Fatalf("no %s event", kind)
		}
	}
}

// testWorker builds a worker with quiet logs and events recorded, on
// intervals that never fire by themselves during a test: heartbeats and
// reclaims happen when the test calls them, with the fake clock.
func testWorker(t *testing.T, q *lite.Queue, opts lite.WorkerOptions) (*lite.Worker, *events, *syncBuffer) {
	t.Helper()
	ev := newEvents()
	logs := &syncBuffer{}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = time.Hour
	}
	if opts.StaleAfter == 0 {
		opts.StaleAfter = 3 * time.Hour
	}
	if opts.ShutdownGrace == 0 {
		opts.ShutdownGrace = guard
	}
	opts.OnEvent = ev.record
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	// Its real-time cadence would delete finished jobs that a test moved
	// past their retention with the fake clock, at moments no test picks.
	opts.NoCleaning = true
	w, err := lite.NewWorker(q, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w, ev, logs
}

// idleSignals signals when w's loop is about to wait. A signal not yet
// taken is not sent again, so that the loop never blocks on it: a worker
// on a server wakes at every poll and at every notification in the
// database, its own queue's or not.
func idleSignals(w *lite.Worker) <-chan struct{} {
	ch := make(chan struct{}, 1)
	lite.SetIdleHook(w, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch
}

// runWorker runs w.Run in the background; the returned stop ends it and
// waits for Run to return.
func runWorker(t *testing.T, w *lite.Worker) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("run: %v", err)
				}
			case <-time.After(3 * guard):
				t.Fatal("Run did not return")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func TestHeartbeatKeepsALongJobAlivePastStaleAfter(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		release := make(chan struct{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			<-release
			return nil
		})
		runWorker(t, w)
		ev.await(t, lite.EventStarted)

		for range 10 { // ten hours, over three times StaleAfter
			clock.Advance(time.Hour)
			is.NoErr(w.Heartbeat(ctx))
			is.NoErr(w.Reclaim(ctx))
		}
		close(release)
		ev.await(t, lite.EventDone)
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(j.Generation, int64(1)) // never taken away
	})
}

func TestFrozenWorkerIsReclaimedAndItsAckSkipped(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})

		thaw := make(chan struct{})
		a, aEvents, aLogs := testWorker(t, q, lite.WorkerOptions{Concurrency: 1, Identity: "worker-a"})
		a.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			<-thaw // frozen: no progress and, below, no heartbeats
			lite.SetResult(ctx, []byte("A"))
			return nil
		})
		runWorker(t, a)
		aEvents.await(t, lite.EventStarted)

		clock.Advance(3*time.Hour + time.Millisecond)
		b, bEvents, _ := testWorker(t, q, lite.WorkerOptions{Identity: "worker-b"})
		b.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			lite.SetResult(ctx, []byte("B"))
			return nil
		})
		is.NoErr(b.Reclaim(ctx))
		reclaimed := bEvents.await(t, lite.EventReclaimed)
		is.Equal(reclaimed.Generation, int64(2))
		rep, err := b.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(rep, lite.Report{Leased: 1, Done: 1})

		close(thaw)
		lost := aEvents.await(t, lite.EventLeaseLost)
		is.Equal(lost.Generation, int64(1))
		is.Equal(lost.CurrentGeneration, int64(3))
		is.True(errors.Is(lost.Err, lite.ErrLeaseLost))
		logs := aLogs.String()
		is.True(strings.Contains(logs, "stale ack skipped"))
		is.True(strings.Contains(logs, "job_id=1 "))
		is.True(strings.Contains(logs, "lease_generation=1 current_generation=3"))

		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(string(j.Result), "B") // A's stale result never landed
		is.Equal(j.LockedBy, "worker-b")
	})
}

func TestALostLeaseCancelsTheHandlerWithALeaseLostError(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})

		causes := make(chan error, 1)
		var calls atomic.Int32
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			if calls.Add(1) > 1 {
				return nil // the second lease runs to the end
			}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		})
		runWorker(t, w)
		ev.await(t, lite.EventStarted)

		_, err := q.ReleaseUnowned(ctx, id)
		is.NoErr(err)
		is.NoErr(w.Heartbeat(ctx))
		cause := recv(t, causes)
		is.True(errors.Is(cause, lite.ErrLeaseLost))
		var lostLease *lite.LeaseLostError
		is.True(errors.As(cause, &lostLease)) // why: the cause names the lease, as an ack's error does
		is.Equal(*lostLease, lite.LeaseLostError{JobID: id, Generation: 1})
		lost := ev.await(t, lite.EventLeaseLost)
		is.Equal(lost.Generation, int64(1))
		is.Equal(lost.CurrentGeneration, int64(2))

		ev.await(t, lite.EventDone) // the worker leased it again, as generation 3
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(j.Generation, int64(3))
		is.Equal(len(j.Errors), 1) // the release's record; the cancelled run's failure was never written
		is.Equal(j.Errors[0].Error, "released by an admin")
	})
}

func TestHandlerOutcomes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cases := []struct {
			name    string
			opts    lite.WorkerOptions
			handler lite.Handler
			check   func(is *is.I, j *lite.Job, rep lite.Report, now time.Time)
		}{
			{
				name: "an error wrapping ErrShutdown gives the job back, spending no attempt",
				handler: func(context.Context, *lite.Job) error {
					return fmt.Errorf("stopped on my own schedule: %w", lite.ErrShutdown)
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Released: 1})
					is.Equal(j.State, lite.StateAvailable)
					is.Equal(j.Attempts, 0)
					is.Equal(len(j.Errors), 0)
				},
			},
			{
				name: "a panic is a failed attempt with the stack in its error",
				handler: func(context.Context, *lite.Job) error {
					panic("boom")
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
					is.Equal(j.State, lite.StateAvailable)
					is.True(strings.HasPrefix(j.Errors[0].Error, "panic: boom"))
					is.True(strings.Contains(j.Errors[0].Error, "worker_test.go")) // the stack
				},
			},
			{
				name: "a timeout is a failed attempt",
				opts: lite.WorkerOptions{KindTimeouts: map[string]time.Duration{"slow": 20 * time.Millisecond}, Timeout: time.Hour},
				handler: func(ctx context.Context, _ *lite.Job) error {
					<-ctx.Done()
					return ctx.Err()
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
					is.Equal(j.State, lite.StateAvailable)
					is.Equal(j.Errors[0].Error, "handler timed out after 20ms: context deadline exceeded")
				},
			},
			{
				name: "a permanent error goes to dead at once",
				handler: func(context.Context, *lite.Job) error {
					return lite.Permanent(errors.New("malformed address"))
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
					is.Equal(j.State, lite.StateDead)
					is.Equal(j.Errors[0].Error, "malformed address")
				},
			},
			{
				name: "a snooze runs the job later without spending an attempt",
				handler: func(context.Context, *lite.Job) error {
					return lite.Snooze(time.Minute)
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, now time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Snoozed: 1})
					is.Equal(j.State, lite.StateAvailable)
					is.Equal(j.Attempts, 0)
					is.Equal(j.Generation, int64(2))
					is.Equal(j.RunAt, now.Add(time.Minute).Local())
					is.Equal(len(j.Errors), 0)
				},
			},
			{
				name: "a result over the size limit fails the job for good",
				handler: func(ctx context.Context, _ *lite.Job) error {
					lite.SetResult(ctx, make([]byte, lite.DefaultMaxPayloadBytes+1))
					return nil
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
					is.Equal(j.State, lite.StateDead)
					is.True(strings.Contains(j.Errors[0].Error, "too large"))
				},
			},
			{
				name: "success stores the handler's result",
				handler: func(ctx context.Context, _ *lite.Job) error {
					lite.SetResult(ctx, []byte("42"))
					return nil
				},
				check: func(is *is.I, j *lite.Job, rep lite.Report, _ time.Time) {
					is.Equal(rep, lite.Report{Leased: 1, Done: 1})
					is.Equal(j.State, lite.StateDone)
					is.Equal(string(j.Result), "42")
				},
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "slow"})
				w, _, _ := testWorker(t, q, c.opts)
				w.Handle("slow", c.handler)
				rep, err := w.RunOnce(t.Context())
				is.NoErr(err)
				c.check(is, mustGet(t, q, id), rep, clock.Now())
			})
		}
	})
}

func TestGracefulShutdown(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a handler that finishes within the grace is acked done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{})
			proceed := make(chan struct{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
				<-proceed
				return nil
			})
			stop := runWorker(t, w)
			is.Equal(ev.await(t, lite.EventStarted).State, lite.StateRunning)
			go func() { close(proceed) }()
			stop()
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		})

		t.Run("unfinished leases are released with the generation bumped and no attempt spent", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{})
			causes := make(chan error, 1)
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{ShutdownGrace: 20 * time.Millisecond})
			w.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			})
			stop := runWorker(t, w)
			ev.await(t, lite.EventStarted)
			stop()
			is.True(errors.Is(recv(t, causes), lite.ErrShutdown))
			ev.await(t, lite.EventReleased)
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Generation, int64(2))
			is.Equal(j.Attempts, 0)
			is.Equal(len(j.Errors), 0)
		})

		t.Run("a handler that ignores cancellation loses its lease and its late ack is skipped", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{})
			stuck := make(chan struct{})
			w, ev, logs := testWorker(t, q, lite.WorkerOptions{ShutdownGrace: 20 * time.Millisecond})
			w.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
				<-stuck // ignores ctx
				return nil
			})
			stop := runWorker(t, w)
			ev.await(t, lite.EventStarted)
			stop()
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Generation, int64(2))
			is.True(strings.Contains(logs.String(), "handler ignored shutdown"))

			close(stuck)
			lost := ev.await(t, lite.EventLeaseLost)
			is.Equal(lost.Why, lite.WhyAbandoned)
			is.Equal(lost.State, lite.StateAvailable)
			is.Equal(lost.CurrentGeneration, int64(2))
			is.Equal(mustGet(t, q, id), j) // the late ack changed nothing
		})
	})
}

func TestInProcessEnqueueWakesAnIdleWorker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, nil)
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{PollInterval: time.Hour})
		idle := idleSignals(w)
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		runWorker(t, w)
		recv(t, idle) // asleep, and its poll is an hour away

		id := mustEnqueue(t, q, lite.NewJob{})
		done := ev.await(t, lite.EventDone)
		is.Equal(done.JobID, id)
	})
}

func TestAJobEnqueuedInACallersTransactionReachesAnIdleWorker(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, nil)
		ctx := t.Context()
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{PollInterval: 10 * time.Millisecond})
		lite.PollOnly(w) // why: only the poll (of data_version, on SQLite) sees the caller's commit
		idle := idleSignals(w)
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		runWorker(t, w)
		recv(t, idle)

		tx, err := q.DB().BeginTx(ctx, nil)
		is.NoErr(err)
		id, err := q.EnqueueTx(ctx, tx, lite.NewJob{})
		is.NoErr(err)
		is.NoErr(tx.Commit())
		is.Equal(ev.await(t, lite.EventDone).JobID, id)
	})
}

func TestAJobFromAnotherProcessIsPickedUp(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		if testing.Short() {
			t.Skip("starts a process")
		}
		polled, watched := "by polling data_version", "by watching the WAL"
		if e.name == "postgres" {
			polled, watched = "by polling", "by listening for the server's notifications"
		}
		cases := []struct {
			name  string
			poll  time.Duration
			setup func(w *lite.Worker)
		}{
			{polled, 10 * time.Millisecond, lite.PollOnly},
			// why: the poll is an hour away, so only the watch can wake it
			{watched, time.Hour, func(*lite.Worker) {}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				q, dsn := e.mustOpen(t, nil)
				w, ev, _ := testWorker(t, q, lite.WorkerOptions{PollInterval: c.poll})
				c.setup(w)
				idle := idleSignals(w)
				w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
				runWorker(t, w)
				recv(t, idle)

				exe, err := os.Executable()
				is.NoErr(err)
				cmd := exec.CommandContext(t.Context(), exe)
				cmd.Env = append(os.Environ(), "LITE_TEST_ENQUEUER="+dsn)
				out, err := cmd.CombinedOutput()
				is.NoErr(err)
				done := ev.await(t, lite.EventDone) // no in-process wake-up crosses processes
				is.Equal(string(done.Job.Payload), "from another process")
				is.Equal(string(bytes.TrimSpace(out)), "1")
			})
		}
	})
}

func TestConcurrencyNeverExceedsItsLimit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.open(t, fast)
		n := scaled(200)
		enqueueN(t, q, n)
		var running, most atomic.Int32
		var handled atomic.Int32
		allDone := make(chan struct{})
		w, _, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 3})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			now := running.Add(1)
			for {
				m := most.Load()
				if now <= m || most.CompareAndSwap(m, now) {
					break
				}
			}
			runtime.Gosched()
			running.Add(-1)
			if handled.Add(1) == int32(n) {
				close(allDone)
			}
			return nil
		})
		stop := runWorker(t, w)
		select {
		case <-allDone:
		case <-time.After(guard):
			t.Fatal("jobs not all handled")
		}
		stop()
		is.True(most.Load() <= 3)
		stats, err := q.Stats(t.Context())
		is.NoErr(err)
		is.Equal(stats[0].Counts, map[lite.State]int64{lite.StateDone: int64(n)})
	})
}

func TestMoreWorkersThanReadersDoNotStall(t *testing.T) {
	is := is.New(t)
	q := mustOpenOpts(t, filepath.Join(t.TempDir(), "q.db"), lite.Options{Readers: 1})
	var done atomic.Int32
	all := make(chan struct{})
	const workers, jobs = 4, 40
	for range workers {
		w, _, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 2})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error {
			if done.Add(1) == jobs {
				close(all)
			}
			return nil
		})
		runWorker(t, w)
	}
	for range jobs {
		mustEnqueue(t, q, lite.NewJob{})
	}
	recv(t, all)
	is.Equal(done.Load(), int32(jobs))
}

func TestWorkerLeasesOnlyKindsItHandles(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		mine := mustEnqueue(t, q, lite.NewJob{Kind: "mine"})
		theirs := mustEnqueue(t, q, lite.NewJob{Kind: "theirs"})
		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle("mine", func(context.Context, *lite.Job) error { return nil })
		rep, err := w.RunOnce(t.Context())
		is.NoErr(err)
		is.Equal(rep, lite.Report{Leased: 1, Done: 1})
		is.Equal(mustGet(t, q, mine).State, lite.StateDone)
		is.Equal(mustGet(t, q, theirs).State, lite.StateAvailable)
	})
}

func TestWorkerOptionsAreChecked(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, nil)
		_, err := lite.NewWorker(q, lite.WorkerOptions{HeartbeatInterval: time.Second, StaleAfter: 2 * time.Second})
		is.Equal(err.Error(), "worker options: StaleAfter 2s is under three heartbeats of 1s")
		_, err = lite.NewWorker(q, lite.WorkerOptions{Concurrency: -1})
		is.True(err != nil)
		_, err = lite.NewWorker(q, lite.WorkerOptions{HeartbeatInterval: 100 * time.Microsecond, StaleAfter: 300 * time.Microsecond})
		is.Equal(err.Error(), "worker options: StaleAfter 300µs is under a millisecond")
		_, err = lite.NewWorker(q, lite.WorkerOptions{KindTimeouts: map[string]time.Duration{"mail": -time.Second}})
		is.Equal(err.Error(), `worker options: negative timeout -1s for kind "mail"`)

		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		is.NoErr(err)
		_, err = w.RunOnce(t.Context())
		is.Equal(err.Error(), "worker: no handlers registered")
	})
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// settles waits until f returns at most want, for goroutines that are
// still winding down; it fails the test if that never happens.
func settles(t *testing.T, what string, f func() int, want int) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for f() > want {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want at most %d", what, f(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartStopCyclesLeakNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		// One reader (SQLite's pool), so that the pool growing by a
		// connection cannot pass for a leak, nor hide one.
		q, _ := e.open(t, lite.Options{Readers: 1})
		cycle := func() {
			mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			stop := runWorker(t, w)
			ev.await(t, lite.EventDone)
			stop()
		}
		// On a server, a cycle whose goroutines happen to overlap more than
		// any before makes the pool open one connection more, which it
		// keeps idle: the pool's own, counted apart, not a leak (a
		// connection held and never given back is in use, and counts).
		unpooled := func() int {
			if e.name == "postgres" {
				return openFDs(t) - q.DB().Stats().Idle
			}
			return openFDs(t)
		}
		cycle() // the first ones open the pool's connections, which stay
		cycle()
		goroutines, fds := runtime.NumGoroutine(), unpooled()
		const cycles = 10
		for range cycles {
			cycle()
		}
		settles(t, "goroutines", runtime.NumGoroutine, goroutines)
		// why: when the pool replaces a connection, SQLite's files can be open
		// twice for a moment; a leak per cycle would show as ten more
		settles(t, "open files", unpooled, fds+1)
	})
}

func TestCommitWithAckLandsOnlyWithTheCurrentLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		_, err := q.DB().ExecContext(ctx, `create table ledger (job integer, generation integer)`)
		is.NoErr(err)
		id := mustEnqueue(t, q, lite.NewJob{})

		release := make(chan struct{})
		var calls atomic.Int32
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			if calls.Add(1) == 1 {
				<-release // the first run outlives its lease
			}
			lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`insert into ledger values ($1, $2)`, job.ID, job.Generation)
				return err
			})
			return nil
		})
		runWorker(t, w)
		ev.await(t, lite.EventStarted)
		_, err = q.ReleaseUnowned(ctx, id)
		is.NoErr(err)
		close(release)
		ev.await(t, lite.EventLeaseLost)
		ev.await(t, lite.EventDone)

		rows, err := q.DB().QueryContext(ctx, `select generation from ledger`)
		is.NoErr(err)
		var gens []int64
		for rows.Next() {
			var g int64
			is.NoErr(rows.Scan(&g))
			gens = append(gens, g)
		}
		is.NoErr(rows.Close())
		is.Equal(gens, []int64{3}) // one row, from the lease that finished the job
		is.Equal(mustGet(t, q, id).State, lite.StateDone)
	})
}

func TestCommitWithAckCalledTwice(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		setup := func(t *testing.T, opts lite.Options) (*lite.Queue, int64) {
			q, _ := e.open(t, opts)
			_, err := q.DB().ExecContext(t.Context(), `create table notes (seq `+e.serialKey()+`, body text not null)`)
			if err != nil {
				t.Fatal(err)
			}
			return q, mustEnqueue(t, q, lite.NewJob{})
		}
		note := func(body string) func(tx *sql.Tx) error {
			return func(tx *sql.Tx) error {
				_, err := tx.Exec(`insert into notes (body) values ($1)`, body)
				return err
			}
		}
		notes := func(t *testing.T, q *lite.Queue) []string {
			rows, err := q.DB().QueryContext(t.Context(), `select body from notes order by seq`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					t.Fatal(err)
				}
				got = append(got, s)
			}
			return got
		}

		t.Run("every write runs, in order, in the ack's transaction", func(t *testing.T) {
			is := is.New(t)
			q, id := setup(t, lite.Options{})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithAck(ctx, note("first"))
				lite.SetResult(ctx, []byte("ok"))
				lite.CommitWithAck(ctx, note("second"))
				return nil
			})
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep, lite.Report{Leased: 1, Done: 1})
			is.Equal(notes(t, q), []string{"first", "second"})
			is.Equal(string(mustGet(t, q, id).Result), "ok") // SetResult combines with it
		})

		t.Run("one failing write commits none and fails the attempt", func(t *testing.T) {
			is := is.New(t)
			q, id := setup(t, lite.Options{})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithAck(ctx, note("first"))
				lite.CommitWithAck(ctx, func(tx *sql.Tx) error { return errors.New("ledger closed") })
				return nil
			})
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
			is.Equal(len(notes(t, q)), 0)
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.True(strings.Contains(j.Errors[0].Error, "ledger closed"))
		})

		t.Run("an Enqueue inside the writes fails at once and says why", func(t *testing.T) {
			is := is.New(t)
			q, id := setup(t, lite.Options{})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithAck(ctx, func(*sql.Tx) error {
					_, err := q.Enqueue(ctx, lite.NewJob{Kind: "follow-up"})
					return err
				})
				return nil
			})
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
			is.Equal(countJobs(t, q), 1) // no follow-up job
			is.True(strings.Contains(mustGet(t, q, id).Errors[0].Error, "EnqueueTx"))
		})

		t.Run("a write through Queue.DB fails the attempt and says why", func(t *testing.T) {
			if e.name != "sqlite" {
				// A server has no single writer for it to wait behind: the
				// write commits on a connection of its own, outside the ack.
				t.Skip("SQLite's one writer only")
			}
			is := is.New(t)
			q, id := setup(t, lite.Options{BusyTimeout: 100 * time.Millisecond})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithAck(ctx, func(*sql.Tx) error {
					_, err := q.DB().Exec(`insert into notes (body) values ('outside')`)
					return err
				})
				return nil
			})
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
			is.Equal(len(notes(t, q)), 0) // nothing written, inside or outside
			j := mustGet(t, q, id)
			is.True(strings.Contains(j.Errors[0].Error, "write through the *sql.Tx given, not Queue.DB()"))
		})
	})
}

func TestSetResultInsideCommitWithAcksWrites(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		run := func(t *testing.T, handler lite.Handler) (*lite.Job, lite.Report) {
			t.Helper()
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, handler)
			rep, err := w.RunOnce(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			return mustGet(t, q, id), rep
		}

		t.Run("a result set by the writes is stored with the ack", func(t *testing.T) {
			is := is.New(t)
			j, rep := run(t, func(ctx context.Context, _ *lite.Job) error {
				lite.SetResult(ctx, []byte("before"))
				lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
					lite.SetResult(ctx, []byte("computed in the writes"))
					return nil
				})
				return nil
			})
			is.Equal(rep, lite.Report{Leased: 1, Done: 1})
			is.Equal(string(j.Result), "computed in the writes") // the last call wins
		})

		t.Run("a result too large set by the writes fails the attempt", func(t *testing.T) {
			is := is.New(t)
			j, rep := run(t, func(ctx context.Context, _ *lite.Job) error {
				lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
					lite.SetResult(ctx, make([]byte, lite.DefaultMaxPayloadBytes+1))
					return nil
				})
				return nil
			})
			is.Equal(rep, lite.Report{Leased: 1, Failed: 1})
			is.Equal(j.State, lite.StateDead)
			is.Equal(len(j.Result), 0)
			is.True(strings.Contains(j.Errors[0].Error, "too large"))
		})

		t.Run("writes that set no result keep the handler's", func(t *testing.T) {
			is := is.New(t)
			j, _ := run(t, func(ctx context.Context, _ *lite.Job) error {
				lite.SetResult(ctx, []byte("from the handler"))
				lite.CommitWithAck(ctx, func(tx *sql.Tx) error { return nil })
				return nil
			})
			is.Equal(string(j.Result), "from the handler")
		})
	})
}
