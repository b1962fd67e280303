package lite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// backoff is the one retry delay of openOutcomes's queues, so that a
// test can say when a failed job runs next.
const backoff = 7 * time.Second

// openOutcomes opens a queue on e with a fake clock and a fixed backoff,
// and an application table, status, that failure writes fill in.
func openOutcomes(t *testing.T, e testEngine) (*lite.Queue, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	q, _ := e.open(t, lite.Options{Now: clock.Now, Backoff: func(int) time.Duration { return backoff }})
	_, err := q.DB().ExecContext(t.Context(), `create table status (seq `+e.serialKey()+`,
    job bigint, state text, attempt bigint, why text, next_run_at bigint, err text)`)
	if err != nil {
		t.Fatal(err)
	}
	return q, clock
}

// statusRow is one row of the application's status table.
type statusRow struct {
	Job       int64
	State     lite.State
	Attempt   int
	Why       lite.Why
	NextRunAt int64 // unix ms; 0 when the job is dead
	Err       string
}

// writeStatus is failure writes that record the failure in status.
func writeStatus(job *lite.Job) func(tx *sql.Tx, f lite.Failure) error {
	return func(tx *sql.Tx, f lite.Failure) error {
		var next int64
		if !f.NextRunAt.IsZero() {
			next = f.NextRunAt.UnixMilli()
		}
		msg := ""
		if f.Err != nil {
			msg = f.Err.Error()
		}
		_, err := tx.Exec(`insert into status (job, state, attempt, why, next_run_at, err)
values ($1, $2, $3, $4, $5, $6)`,
			job.ID, f.State, f.Attempt, f.Why, next, msg)
		return err
	}
}

func statusRows(t *testing.T, q *lite.Queue) []statusRow {
	t.Helper()
	rows, err := q.DB().QueryContext(t.Context(), `select job, state, attempt, why, next_run_at, err from status order by seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []statusRow
	for rows.Next() {
		var r statusRow
		if err := rows.Scan(&r.Job, &r.State, &r.Attempt, &r.Why, &r.NextRunAt, &r.Err); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// runOne runs one job through w.RunOnce with handler h and returns its
// last event.
func runOne(t *testing.T, q *lite.Queue, ev *events, w *lite.Worker, h lite.Handler) lite.Event {
	t.Helper()
	w.Handle(lite.AnyKind, h)
	rep, err := w.RunOnce(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Leased != 1 {
		t.Fatalf("leased %d jobs, want 1", rep.Leased)
	}
	seen := ev.seen()
	return seen[len(seen)-1]
}

func TestFailedEventsSayWhatHappensNext(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		boom := errors.New("smtp timeout")
		cases := []struct {
			name        string
			maxAttempts int
			handler     lite.Handler
			state       lite.State
			why         lite.Why
		}{
			{"a failure with attempts left retries after the backoff", 3,
				func(context.Context, *lite.Job) error { return boom },
				lite.StateAvailable, lite.WhyRetryLater},
			{"a failure of the last attempt is dead", 1,
				func(context.Context, *lite.Job) error { return boom },
				lite.StateDead, lite.WhyAttemptsSpent},
			{"a permanent failure is dead with attempts left", 3,
				func(context.Context, *lite.Job) error { return lite.Permanent(boom) },
				lite.StateDead, lite.WhyPermanent},
			{"a result too large is a permanent failure", 3,
				func(ctx context.Context, _ *lite.Job) error {
					lite.SetResult(ctx, make([]byte, lite.DefaultMaxPayloadBytes+1))
					return nil
				},
				lite.StateDead, lite.WhyPermanent},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				q, clock := openOutcomes(t, e)
				id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: c.maxAttempts})
				w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
				got := runOne(t, q, ev, w, c.handler)
				is.Equal(got.Kind, lite.EventFailed)
				is.Equal(got.State, c.state)
				is.Equal(got.Why, c.why)
				j := mustGet(t, q, id)
				is.Equal(j.State, c.state) // the event says what the row says
				if c.state == lite.StateAvailable {
					is.True(got.NextRunAt.Equal(clock.Now().Add(backoff)))
					is.True(j.RunAt.Equal(got.NextRunAt))
					is.True(errors.Is(got.Err, boom))
				} else {
					is.True(got.NextRunAt.IsZero()) // a dead job runs no more
				}
			})
		}
	})
}

func TestSettledEventsSayTheJobsState(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("done", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(context.Context, *lite.Job) error { return nil })
			is.Equal(got.Kind, lite.EventDone)
			is.Equal(got.State, lite.StateDone)
			is.True(got.NextRunAt.IsZero())
			is.Equal(got.Why, lite.Why(""))
		})

		t.Run("snoozed", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(context.Context, *lite.Job) error { return lite.Snooze(time.Minute) })
			is.Equal(got.Kind, lite.EventSnoozed)
			is.Equal(got.State, lite.StateAvailable)
			is.True(got.NextRunAt.Equal(clock.Now().Add(time.Minute)))
		})

		t.Run("reclaimed", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			mustEnqueue(t, q, lite.NewJob{})
			mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			_, err := q.Lease(t.Context(), lite.LeaseRequest{Max: 2})
			is.NoErr(err)
			clock.Advance(time.Hour)
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			is.NoErr(w.Reclaim(t.Context()))
			got := ev.seen()
			is.Equal(len(got), 2)
			is.Equal(got[0].State, lite.StateAvailable)
			is.True(got[0].NextRunAt.Equal(clock.Now())) // at once: it keeps its place in line
			is.Equal(got[1].State, lite.StateDead)
			is.True(got[1].NextRunAt.IsZero())
		})
	})
}

// heldRun is a job whose handler, in worker a's RunOnce, holds it until
// proceed closes (then it returns nil) or its context ends (then it
// returns the cause).
type heldRun struct {
	a       *lite.Worker
	events  *events
	job     *lite.Job
	proceed chan struct{}
	done    chan lite.Report
}

func holdOne(t *testing.T, q *lite.Queue) *heldRun {
	t.Helper()
	mustEnqueue(t, q, lite.NewJob{})
	h := &heldRun{proceed: make(chan struct{}), done: make(chan lite.Report, 1)}
	h.a, h.events, _ = testWorker(t, q, lite.WorkerOptions{Identity: "worker-a"})
	h.a.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
		select {
		case <-h.proceed:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	go func() {
		rep, err := h.a.RunOnce(context.Background())
		if err != nil {
			t.Error(err)
		}
		h.done <- rep
	}()
	h.job = h.events.await(t, lite.EventStarted).Job
	return h
}

func TestLeaseLostEventsSayWhy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		cases := []struct {
			name string
			// lose takes the lease from worker a, and lets its handler return.
			lose       func(t *testing.T, q *lite.Queue, clock *fakeClock, h *heldRun)
			why        lite.Why
			state      lite.State
			generation int64
			record     string // the errors-log entry of the lost generation
		}{
			{
				name: "a cancel of the running job, seen by a heartbeat",
				lose: func(t *testing.T, q *lite.Queue, _ *fakeClock, h *heldRun) {
					is := is.New(t)
					is.NoErr(q.Cancel(t.Context(), h.job.ID))
					is.NoErr(h.a.Heartbeat(t.Context()))
				},
				why: lite.WhyCancelled, state: lite.StateCancelled, generation: 2, record: "cancelled while running",
			},
			{
				name: "a reclaim by another worker after the heartbeat lapsed",
				lose: func(t *testing.T, q *lite.Queue, clock *fakeClock, h *heldRun) {
					is := is.New(t)
					clock.Advance(3*time.Hour + time.Millisecond) // testWorker's StaleAfter
					b, _, _ := testWorker(t, q, lite.WorkerOptions{Identity: "worker-b"})
					is.NoErr(b.Reclaim(t.Context()))
					is.NoErr(h.a.Heartbeat(t.Context()))
				},
				why: lite.WhyReclaimed, state: lite.StateAvailable, generation: 2,
				record: "heartbeat lapsed: no renewal from worker-a for 10800001 ms (its owner promised 10800000 ms)",
			},
			{
				name: "a release by an admin, then a late ack",
				lose: func(t *testing.T, q *lite.Queue, _ *fakeClock, h *heldRun) {
					is := is.New(t)
					_, err := q.ReleaseUnowned(t.Context(), h.job.ID)
					is.NoErr(err)
					close(h.proceed)
				},
				why: lite.WhyReleased, state: lite.StateAvailable, generation: 2, record: "released by an admin",
			},
			{
				name: "a cancel and a purge, then a late ack",
				lose: func(t *testing.T, q *lite.Queue, clock *fakeClock, h *heldRun) {
					is := is.New(t)
					is.NoErr(q.Cancel(t.Context(), h.job.ID))
					clock.Advance(time.Second)
					n, err := q.Purge(t.Context(), clock.Now())
					is.NoErr(err)
					is.Equal(n, int64(1))
					close(h.proceed)
				},
				why: lite.WhyDeleted, state: "", generation: 0,
			},
			{
				name: "a release under the same lease by other code, and a lease by another worker",
				lose: func(t *testing.T, q *lite.Queue, _ *fakeClock, h *heldRun) {
					is := is.New(t)
					is.NoErr(q.Release(t.Context(), h.job.Lease()))
					jobs, err := q.Lease(t.Context(), lite.LeaseRequest{LockedBy: "worker-b"})
					is.NoErr(err)
					is.Equal(len(jobs), 1)
					close(h.proceed)
				},
				why: lite.WhySuperseded, state: lite.StateRunning, generation: 3,
			},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				is := is.New(t)
				q, clock := openOutcomes(t, e)
				h := holdOne(t, q)
				c.lose(t, q, clock, h)
				got := h.events.await(t, lite.EventLeaseLost)
				is.Equal(recv(t, h.done).LeaseLost, 1)
				is.Equal(got.Why, c.why)
				is.Equal(got.State, c.state)
				is.Equal(got.Generation, int64(1))
				is.Equal(got.CurrentGeneration, c.generation)
				var lost *lite.LeaseLostError
				is.True(errors.As(got.Err, &lost)) // the event's error says the same
				is.Equal(*lost, lite.LeaseLostError{JobID: h.job.ID, Generation: 1,
					CurrentGeneration: c.generation, State: c.state, Why: c.why})
				is.True(errors.Is(got.Err, lite.ErrLeaseLost))
				if c.record == "" {
					return
				}
				j := mustGet(t, q, h.job.ID)
				last := j.Errors[len(j.Errors)-1]
				// why: `lite show` prints these entries, so an admin sees it too
				is.Equal(last, lite.AttemptError{Attempt: 1, Generation: 1, At: clock.Now().Local(), Error: c.record})
			})
		}
	})
}

func TestOwnerWritesSayHowTheLeaseWasLost(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a second write under one lease finds it already settled", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			a := mustLeaseOne(t, q, lite.DefaultQueue)
			is.NoErr(q.AckDone(t.Context(), a.Lease(), nil))
			var lost *lite.LeaseLostError
			is.True(errors.As(q.Release(t.Context(), a.Lease()), &lost))
			is.Equal(*lost, lite.LeaseLostError{JobID: id, Generation: 1, CurrentGeneration: 1,
				State: lite.StateDone, Why: lite.WhyAlreadySettled})
		})

		t.Run("every owner write reads the reason", func(t *testing.T) {
			writes := map[string]func(context.Context, *lite.Queue, lite.Lease) error{
				"ack done":   func(ctx context.Context, q *lite.Queue, l lite.Lease) error { return q.AckDone(ctx, l, nil) },
				"ack failed": func(ctx context.Context, q *lite.Queue, l lite.Lease) error { return q.AckFailed(ctx, l, nil) },
				"fail": func(ctx context.Context, q *lite.Queue, l lite.Lease) error {
					_, err := q.Fail(ctx, l, nil, nil)
					return err
				},
				"release": func(ctx context.Context, q *lite.Queue, l lite.Lease) error { return q.Release(ctx, l) },
				"snooze":  func(ctx context.Context, q *lite.Queue, l lite.Lease) error { return q.Snooze(ctx, l, time.Minute) },
				"complete": func(ctx context.Context, q *lite.Queue, l lite.Lease) error {
					return q.Complete(ctx, l, nil, nil)
				},
			}
			for name, write := range writes {
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					q, _ := openOutcomes(t, e)
					id := mustEnqueue(t, q, lite.NewJob{})
					a := mustLeaseOne(t, q, lite.DefaultQueue)
					is.NoErr(q.Cancel(t.Context(), id))
					err := write(t.Context(), q, a.Lease())
					var lost *lite.LeaseLostError
					is.True(errors.As(err, &lost))
					is.Equal(lost.Why, lite.WhyCancelled)
					is.True(strings.HasSuffix(err.Error(),
						"job 1 generation 1: lease lost: cancelled (the job is cancelled at generation 2)"))
				})
			}
		})
	})
}

func TestCommitWithFailure(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("its writes commit with a retry, given the failure as recorded, in order", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 3})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, writeStatus(job))
				lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
					_, err := tx.Exec(`update status set err = err || ' (seen second)'`)
					return err
				})
				return errors.New("bank down")
			})
			is.Equal(got.Why, lite.WhyRetryLater)
			next := clock.Now().Add(backoff)
			is.Equal(statusRows(t, q), []statusRow{{Job: id, State: lite.StateAvailable, Attempt: 1,
				Why: lite.WhyRetryLater, NextRunAt: next.UnixMilli(), Err: "bank down (seen second)"}})
			is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
		})

		t.Run("its writes commit with a death", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, writeStatus(job))
				return errors.New("bank down")
			})
			is.Equal(statusRows(t, q), []statusRow{{Job: id, State: lite.StateDead, Attempt: 1,
				Why: lite.WhyAttemptsSpent, Err: "bank down"}})
			is.Equal(mustGet(t, q, id).State, lite.StateDead)
		})

		t.Run("they run for a panic, a timeout and a refused done-ack", func(t *testing.T) {
			handlers := map[string]lite.Handler{
				"panic": func(context.Context, *lite.Job) error { panic("boom") },
				"timeout": func(ctx context.Context, _ *lite.Job) error {
					<-ctx.Done()
					return ctx.Err()
				},
				"refused done-ack": func(ctx context.Context, _ *lite.Job) error {
					lite.CommitWithAck(ctx, func(*sql.Tx) error { return errors.New("ledger closed") })
					return nil
				},
			}
			for name, h := range handlers {
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					q, _ := openOutcomes(t, e)
					id := mustEnqueue(t, q, lite.NewJob{})
					w, ev, _ := testWorker(t, q, lite.WorkerOptions{Timeout: 20 * time.Millisecond})
					got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
						lite.CommitWithFailure(ctx, writeStatus(job))
						return h(ctx, job)
					})
					is.Equal(got.Kind, lite.EventFailed)
					rows := statusRows(t, q)
					is.Equal(len(rows), 1)
					is.Equal(rows[0].Err, mustGet(t, q, id).Errors[0].Error) // the error as recorded
				})
			}
		})

		t.Run("they do not run for a snooze", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, writeStatus(job))
				return lite.Snooze(time.Minute)
			})
			is.Equal(got.Kind, lite.EventSnoozed)
			is.Equal(len(statusRows(t, q)), 0)
		})

		t.Run("a stale worker's writes never run and the successor's job is untouched", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			proceed := make(chan struct{})
			var called atomic.Bool
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
					called.Store(true)
					return writeStatus(job)(tx, f)
				})
				<-proceed
				return errors.New("stale failure")
			})
			done := make(chan lite.Report, 1)
			go func() {
				rep, _ := w.RunOnce(context.Background())
				done <- rep
			}()
			ev.await(t, lite.EventStarted)
			_, err := q.ReleaseUnowned(t.Context(), id)
			is.NoErr(err)
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{LockedBy: "successor"})
			is.NoErr(err)
			is.Equal(len(jobs), 1)
			successor := mustGet(t, q, id)
			clock.Advance(time.Second) // so that any write would stamp a new time
			close(proceed)

			lost := ev.await(t, lite.EventLeaseLost)
			is.Equal(lost.Why, lite.WhyReleased)
			is.Equal(recv(t, done), lite.Report{Leased: 1, LeaseLost: 1})
			is.True(!called.Load()) // the guard missed first
			is.Equal(len(statusRows(t, q)), 0)
			is.Equal(mustGet(t, q, id), successor)
		})

		t.Run("failing writes still record the failure, with both errors", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 3})
			w, ev, logs := testWorker(t, q, lite.WorkerOptions{})
			full := errors.New("status table full")
			got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
					if err := writeStatus(job)(tx, f); err != nil {
						return err
					}
					return full
				})
				return errors.New("bank down")
			})
			is.Equal(len(statusRows(t, q)), 0) // none of the writes committed
			is.Equal(got.Kind, lite.EventFailed)
			is.Equal(got.Why, lite.WhyFailureWritesFailed)
			is.Equal(got.State, lite.StateAvailable) // the failure is recorded all the same
			is.True(got.NextRunAt.Equal(clock.Now().Add(backoff)))
			is.True(errors.Is(got.Err, full))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Errors[0].Error, "bank down\nfailure writes: status table full")
			is.True(strings.Contains(logs.String(), "level=ERROR"))
			is.True(strings.Contains(logs.String(), "failure writes failed"))
		})

		t.Run("an Enqueue inside the writes fails at once and says why", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, func(*sql.Tx, lite.Failure) error {
					_, err := q.Enqueue(ctx, lite.NewJob{Kind: "follow-up"})
					return err
				})
				return errors.New("bank down")
			})
			is.Equal(got.Why, lite.WhyFailureWritesFailed)
			is.Equal(countJobs(t, q), 1) // no follow-up job
			is.True(strings.Contains(mustGet(t, q, id).Errors[0].Error, "EnqueueTx"))
		})

		t.Run("a Fail inside the writes fails at once and says why", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			got := runOne(t, q, ev, w, func(ctx context.Context, job *lite.Job) error {
				lite.CommitWithFailure(ctx, func(*sql.Tx, lite.Failure) error {
					// why: without the refusal the Fail waits for the writer
					// its own ack holds, whatever its context says; the bound
					// turns that hang into this test's failure.
					refused := make(chan error, 1)
					go func() {
						_, err := q.Fail(ctx, job.Lease(), errors.New("again"), nil)
						refused <- err
					}()
					select {
					case err := <-refused:
						return err
					case <-time.After(10 * time.Second):
						return errors.New("the Fail waited for the writer")
					}
				})
				return errors.New("bank down")
			})
			is.Equal(got.Why, lite.WhyFailureWritesFailed)
			is.True(strings.Contains(mustGet(t, q, id).Errors[0].Error, "would wait forever"))
		})
	})
}

func TestFail(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a current lease records the failure and its writes in one commit", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 2})
			a := mustLeaseOne(t, q, lite.DefaultQueue)
			f, err := q.Fail(t.Context(), a.Lease(), errors.New("bank down"), writeStatus(a))
			is.NoErr(err)
			next := clock.Now().Add(backoff)
			is.True(f.NextRunAt.Equal(next))
			f.NextRunAt = time.Time{}
			is.Equal(f, lite.Failure{Err: f.Err, Attempt: 1, MaxAttempts: 2, State: lite.StateAvailable, Why: lite.WhyRetryLater})
			is.Equal(statusRows(t, q), []statusRow{{Job: id, State: lite.StateAvailable, Attempt: 1,
				Why: lite.WhyRetryLater, NextRunAt: next.UnixMilli(), Err: "bank down"}})
		})

		t.Run("a lost lease runs no writes and changes nothing", func(t *testing.T) {
			is := is.New(t)
			q, clock := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			a := mustLeaseOne(t, q, lite.DefaultQueue)
			_, err := q.ReleaseUnowned(t.Context(), id)
			is.NoErr(err)
			mustLeaseOne(t, q, lite.DefaultQueue)
			before := mustGet(t, q, id)
			clock.Advance(time.Second)
			_, err = q.Fail(t.Context(), a.Lease(), errors.New("stale"), func(*sql.Tx, lite.Failure) error {
				t.Error("the writes ran under a lost lease")
				return nil
			})
			var lost *lite.LeaseLostError
			is.True(errors.As(err, &lost))
			is.Equal(lost.Why, lite.WhyReleased)
			is.Equal(mustGet(t, q, id), before)
		})

		t.Run("failing writes leave the failure recorded and say so", func(t *testing.T) {
			is := is.New(t)
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			a := mustLeaseOne(t, q, lite.DefaultQueue)
			full := errors.New("status table full")
			f, err := q.Fail(t.Context(), a.Lease(), lite.Permanent(errors.New("bad card")), func(tx *sql.Tx, f lite.Failure) error {
				if err := writeStatus(a)(tx, f); err != nil {
					return err
				}
				return full
			})
			is.NoErr(err) // the failure was recorded
			is.Equal(f.Why, lite.WhyFailureWritesFailed)
			is.Equal(f.State, lite.StateDead)
			is.True(errors.Is(f.Err, full))
			is.True(lite.IsPermanent(f.Err))
			is.Equal(len(statusRows(t, q)), 0)
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateDead)
			is.Equal(j.Errors[0].Error, "bad card\nfailure writes: status table full")
		})
	})
}

func TestCompleteRecordsItsResult(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		setup := func(t *testing.T) (*lite.Queue, int64, *lite.Job) {
			q, _ := openOutcomes(t, e)
			id := mustEnqueue(t, q, lite.NewJob{})
			return q, id, mustLeaseOne(t, q, lite.DefaultQueue)
		}
		mark := func(id int64) func(tx *sql.Tx) error {
			return func(tx *sql.Tx) error {
				_, err := tx.Exec(`insert into status (job, state, attempt, why, next_run_at, err)
values ($1, 'done', 1, '', 0, '')`, id)
				return err
			}
		}

		t.Run("with a current lease the result and the writes commit together", func(t *testing.T) {
			is := is.New(t)
			q, id, a := setup(t)
			is.NoErr(q.Complete(t.Context(), a.Lease(), []byte("receipt 42"), mark(id)))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateDone)
			is.Equal(string(j.Result), "receipt 42")
			is.Equal(len(statusRows(t, q)), 1)
		})

		t.Run("a stale lease's result never lands, nor its writes", func(t *testing.T) {
			is := is.New(t)
			q, id, a := setup(t)
			_, err := q.ReleaseUnowned(t.Context(), id)
			is.NoErr(err)
			b := mustLeaseOne(t, q, lite.DefaultQueue)
			err = q.Complete(t.Context(), a.Lease(), []byte("stale receipt"), mark(id))
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(len(statusRows(t, q)), 0)
			is.NoErr(q.Complete(t.Context(), b.Lease(), []byte("receipt 43"), nil))
			is.Equal(string(mustGet(t, q, id).Result), "receipt 43")
		})

		t.Run("a result too large is refused and nothing is written", func(t *testing.T) {
			is := is.New(t)
			q, id, a := setup(t)
			err := q.Complete(t.Context(), a.Lease(), make([]byte, lite.DefaultMaxPayloadBytes+1), mark(id))
			is.True(errors.Is(err, lite.ErrTooLarge))
			is.Equal(len(statusRows(t, q)), 0)
			is.Equal(mustGet(t, q, id).State, lite.StateRunning)
		})
	})
}

func TestAWrappedSnoozeStillSnoozes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, clock := openOutcomes(t, e)
		id := mustEnqueue(t, q, lite.NewJob{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
		wrapped := fmt.Errorf("waiting for the bank: %w", lite.Snooze(time.Minute))
		var snooze *lite.SnoozeError
		is.True(errors.As(wrapped, &snooze))
		is.Equal(snooze.Delay, time.Minute)
		got := runOne(t, q, ev, w, func(context.Context, *lite.Job) error { return wrapped })
		is.Equal(got.Kind, lite.EventSnoozed)
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateAvailable)
		is.Equal(j.Attempts, 0) // no attempt spent
		is.True(j.RunAt.Equal(clock.Now().Add(time.Minute)))
	})
}

func TestShutdownWinsOverAReturnedError(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := openOutcomes(t, e)
		id := mustEnqueue(t, q, lite.NewJob{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{ShutdownGrace: 20 * time.Millisecond})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			lite.CommitWithFailure(ctx, writeStatus(job))
			<-ctx.Done()
			return errors.New("gave up") // says nothing of the shutdown
		})
		stop := runWorker(t, w)
		ev.await(t, lite.EventStarted)
		stop()
		got := ev.await(t, lite.EventReleased)
		is.Equal(got.State, lite.StateAvailable)
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateAvailable)
		is.Equal(j.Attempts, 0) // released, not failed
		is.Equal(len(j.Errors), 0)
		is.Equal(len(statusRows(t, q)), 0) // and no failure writes ran
		for _, e := range ev.seen() {
			is.True(e.Kind != lite.EventFailed)
		}
	})
}

func TestEventJSON(t *testing.T) {
	job := &lite.Job{ID: 7, Queue: "mail", Kind: "send", State: lite.StateRunning, Generation: 2,
		RunAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	jobJSON, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	cet := time.FixedZone("CET", 3600)
	cases := []struct {
		name string
		ev   lite.Event
		want string
	}{
		{
			name: "a failure with a retry",
			ev: lite.Event{Kind: lite.EventFailed, JobID: 7, Job: job, Generation: 2, State: lite.StateAvailable,
				NextRunAt: time.Date(2026, 1, 2, 4, 4, 12, 500_000_000, cet), Why: lite.WhyRetryLater,
				Err: errors.New("smtp timeout"), Elapsed: 1500 * time.Millisecond},
			want: `{"kind":"failed","job_id":7,"generation":2,"state":"available",` +
				`"next_run_at":"2026-01-02T03:04:12.5Z","why":"retry later","error":"smtp timeout",` +
				`"elapsed_ms":1500,"job":` + string(jobJSON) + `}`,
		},
		{
			name: "a lease lost to a purge",
			ev: lite.Event{Kind: lite.EventLeaseLost, JobID: 7, Job: job, Generation: 2, Why: lite.WhyDeleted,
				Err: &lite.LeaseLostError{JobID: 7, Generation: 2, Why: lite.WhyDeleted}, Elapsed: 3 * time.Millisecond},
			want: `{"kind":"lease lost","job_id":7,"generation":2,"state":"","why":"deleted",` +
				`"error":"job 7 generation 2: lease lost: deleted","elapsed_ms":3,"job":` + string(jobJSON) + `}`,
		},
		{
			name: "a lease lost to a cancel",
			ev: lite.Event{Kind: lite.EventLeaseLost, JobID: 7, Job: job, Generation: 2, CurrentGeneration: 3,
				State: lite.StateCancelled, Why: lite.WhyCancelled,
				Err: &lite.LeaseLostError{JobID: 7, Generation: 2, CurrentGeneration: 3, State: lite.StateCancelled, Why: lite.WhyCancelled}},
			want: `{"kind":"lease lost","job_id":7,"generation":2,"current_generation":3,"state":"cancelled",` +
				`"why":"cancelled","error":"job 7 generation 2: lease lost: cancelled (the job is cancelled at generation 3)",` +
				`"elapsed_ms":0,"job":` + string(jobJSON) + `}`,
		},
		{
			name: "a reclaim, which has no job",
			ev:   lite.Event{Kind: lite.EventReclaimed, JobID: 7, Generation: 3, State: lite.StateDead},
			want: `{"kind":"reclaimed","job_id":7,"generation":3,"state":"dead","elapsed_ms":0}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			got, err := json.Marshal(c.ev)
			is.NoErr(err)
			is.Equal(string(got), c.want)
		})
	}
}

func TestTheWritesOfAHandlerFailItsAttemptWhateverTheyDo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler lite.Handler
		want    string
	}{
		{"success writes that panic", func(ctx context.Context, _ *lite.Job) error {
			lite.CommitWithAck(ctx, func(*sql.Tx) error { panic("ack writes panic") })
			return nil
		}, "panic: ack writes panic"},
		{"failure writes that panic", func(ctx context.Context, _ *lite.Job) error {
			lite.CommitWithFailure(ctx, func(*sql.Tx, lite.Failure) error {
				var rows []int
				_ = rows[len(rows)] // a bug in the app's writes: index out of range
				return nil
			})
			return errors.New("boom")
		}, "index out of range"},
		{"success writes refused by a downstream fence", func(ctx context.Context, _ *lite.Job) error {
			// The app's own fencing token was refused: its attempt failed;
			// lite's lease is as current as ever.
			lite.CommitWithAck(ctx, func(*sql.Tx) error { return fmt.Errorf("downstream: %w", lite.ErrLeaseLost) })
			return nil
		}, "downstream: lease lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			q, _ := mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, tc.handler)
			rep, err := w.RunOnce(t.Context()) // the worker lives on
			is.NoErr(err)
			is.Equal(rep.Failed, 1)
			failed := ev.await(t, lite.EventFailed)
			is.True(strings.Contains(failed.Err.Error(), tc.want))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable) // retried later, not left running
			is.True(strings.Contains(j.Errors[0].Error, tc.want))
		})
	}
}

func TestCompleteWritesRefusedDownstreamAreNotALostLease(t *testing.T) {
	is := is.New(t)
	q, _ := mustOpen(t, newFakeClock())
	mustEnqueue(t, q, lite.NewJob{})
	j := mustLeaseOne(t, q, lite.DefaultQueue)
	err := q.Complete(t.Context(), j.Lease(), nil, func(*sql.Tx) error {
		return fmt.Errorf("downstream: %w", lite.ErrLeaseLost)
	})
	var lost *lite.LeaseLostError
	is.True(!errors.As(err, &lost)) // the writes' error, not a story about the lease
	is.True(strings.Contains(err.Error(), "downstream"))
	is.NoErr(q.AckDone(t.Context(), j.Lease(), nil)) // the lease is still ours
}
