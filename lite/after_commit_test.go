package lite_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAfterCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("enqueues wait for it once per commit, and leases and renewals never call it", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			var calls atomic.Int64
			q, _ := e.open(t, lite.Options{AfterCommit: func(context.Context) error { calls.Add(1); return nil }})
			mustEnqueue(t, q, lite.NewJob{Payload: []byte("{}")})
			is.Equal(calls.Load(), int64(1))
			_, err := q.EnqueueBatch(ctx, []lite.NewJob{{Payload: []byte("{}")}, {Payload: []byte("{}")}})
			is.NoErr(err)
			is.Equal(calls.Load(), int64(2)) // one commit, one wait
			jobs, err := q.Lease(ctx, lite.LeaseRequest{Max: 3})
			is.NoErr(err)
			_, err = q.Renew(ctx, []lite.Lease{jobs[0].Lease()})
			is.NoErr(err)
			is.Equal(calls.Load(), int64(2))
		})
		t.Run("an enqueue whose wait fails returns its id with ErrAfterCommit, and the job is in the file", func(t *testing.T) {
			is := is.New(t)
			offline := errors.New("replica offline")
			q, _ := e.open(t, lite.Options{AfterCommit: func(context.Context) error { return offline }})
			id, err := q.Enqueue(t.Context(), lite.NewJob{Payload: []byte("{}")})
			is.True(errors.Is(err, lite.ErrAfterCommit))
			is.True(errors.Is(err, offline))
			is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
			out, err := q.EnqueueBatch(t.Context(), []lite.NewJob{{Payload: []byte("{}")}})
			is.True(errors.Is(err, lite.ErrAfterCommit))
			is.Equal(mustGet(t, q, out[0].ID).State, lite.StateAvailable)
		})
		t.Run("a worker's done-acks are reported only once it returned, and a group commit of many waits once", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			const n = 8
			var calls, reported atomic.Int64
			var working atomic.Bool // past the enqueues
			first, release := make(chan struct{}), make(chan struct{})
			q, _ := e.open(t, lite.Options{AfterCommit: func(context.Context) error {
				if working.Load() && calls.Add(1) == 1 {
					close(first)
					<-release
				}
				return nil
			}})
			for range n {
				mustEnqueue(t, q, lite.NewJob{Payload: []byte("{}")})
			}
			working.Store(true)
			w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: n, StopWhenIdle: true, OnEvent: func(ev lite.Event) {
				if ev.Kind == lite.EventDone {
					reported.Add(1)
				}
			}})
			is.NoErr(err)
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			ran := make(chan error, 1)
			go func() { ran <- w.Run(ctx) }()
			select {
			case <-first:
			case err := <-ran:
				t.Fatalf("the worker finished its jobs without waiting (%v)", err)
			}
			// The first group's acks are committed and waiting; every
			// other ack queues behind them for the next group: on a server
			// in the group commit's queue, on a file (whose writer rounds
			// answer each ack on its own) among the callers of the next wait.
			for doneIn(t, q)+int64(lite.QueuedAcks(w)) < n || e.name == "sqlite" && lite.AfterCommitsJoined(q) < n-1 {
				runtime.Gosched()
			}
			is.Equal(reported.Load(), int64(0)) // committed, but not reported before the wait returns
			close(release)
			is.NoErr(<-ran)
			is.Equal(reported.Load(), int64(n))
			is.True(calls.Load() <= 2) // the first group, then all the acks queued behind it in one
		})
		t.Run("a done-ack whose wait times out is reported done, not written again and found lost", func(t *testing.T) {
			is := is.New(t)
			var working atomic.Bool
			q, _ := e.open(t, lite.Options{AfterCommit: func(context.Context) error {
				if working.Load() {
					return context.DeadlineExceeded // a net.Error, as a connection's timeout is
				}
				return nil
			}})
			id := mustEnqueue(t, q, lite.NewJob{Payload: []byte("{}")})
			working.Store(true)
			var events []lite.EventKind
			var mu sync.Mutex
			w, err := lite.NewWorker(q, lite.WorkerOptions{StopWhenIdle: true, Logger: slog.New(slog.DiscardHandler), OnEvent: func(ev lite.Event) {
				mu.Lock()
				defer mu.Unlock()
				if ev.Kind != lite.EventStarted {
					events = append(events, ev.Kind)
				}
			}})
			is.NoErr(err)
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			is.NoErr(w.Run(t.Context()))
			is.Equal(events, []lite.EventKind{lite.EventDone})
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		})
		t.Run("a failed attempt waits for it too, and a wait that fails leaves the outcome written and reported", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			var calls atomic.Int64
			q, _ := e.open(t, lite.Options{AfterCommit: func(context.Context) error {
				calls.Add(1)
				return errors.New("replica offline")
			}})
			id := mustEnqueueNoWait(t, q)
			calls.Store(0)
			var failed atomic.Int64
			w, err := lite.NewWorker(q, lite.WorkerOptions{StopWhenIdle: true, Logger: slog.New(slog.DiscardHandler), OnEvent: func(ev lite.Event) {
				if ev.Kind == lite.EventFailed && ev.State == lite.StateDead {
					failed.Add(1)
				}
			}})
			is.NoErr(err)
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return lite.Permanent(errors.New("no")) })
			is.NoErr(w.Run(ctx))
			is.Equal(calls.Load(), int64(1))
			is.Equal(failed.Load(), int64(1))
			is.Equal(mustGet(t, q, id).State, lite.StateDead)
		})
	})
}

// mustEnqueueNoWait enqueues a job, whatever AfterCommit says.
func mustEnqueueNoWait(tb testing.TB, q *lite.Queue) int64 {
	tb.Helper()
	id, err := q.Enqueue(tb.Context(), lite.NewJob{Payload: []byte("{}")})
	if err != nil && !errors.Is(err, lite.ErrAfterCommit) {
		tb.Fatal(err)
	}
	return id
}

// doneIn is how many jobs are done in q's file.
func doneIn(tb testing.TB, q *lite.Queue) int64 {
	tb.Helper()
	stats, err := q.Stats(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	var n int64
	for _, s := range stats {
		n += s.Counts[lite.StateDone]
	}
	return n
}
