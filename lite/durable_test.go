package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// durableWorker is a quiet worker whose handler for kind "d" is h.
func durableWorker(t *testing.T, q *lite.Queue, h lite.Handler) *lite.Worker {
	t.Helper()
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("d", h)
	return w
}

func mustRun(t *testing.T, w *lite.Worker, id int64) lite.Event {
	t.Helper()
	ev, err := w.RunJob(t.Context(), id)
	if err != nil {
		t.Fatalf("run job %d: %v", id, err)
	}
	return ev
}

// staleContext leases job id, takes the lease away by a release, and
// returns a handler context of the lost lease and whether it was told so.
func staleContext(t *testing.T, q *lite.Queue, id int64) (context.Context, *atomic.Bool) {
	t.Helper()
	job := mustLeaseOne(t, q, "default")
	if job.ID != id {
		t.Fatalf("leased job %d, not %d", job.ID, id)
	}
	if _, err := q.ReleaseUnowned(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	told := &atomic.Bool{}
	return lite.HandlerContext(t.Context(), q, job.Lease(), func(err error) { told.Store(errors.Is(err, lite.ErrLeaseLost)) }), told
}

func TestRunStepRunsOncePerJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a step asked for again in the same run gets its record", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			var runs int
			w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
				for i := range 3 {
					got, err := lite.RunStep(ctx, "charge", func(context.Context) (int, error) {
						runs++
						return 100 + i, nil
					})
					if err != nil {
						return err
					}
					is.Equal(got, 100) // the first call's record
				}
				return nil
			})
			is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
			is.Equal(runs, 1)
		})
		t.Run("a retry after a later step failed gets the first step's record", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 3})
			var runs, attempts int
			w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
				attempts++
				got, err := lite.RunStep(ctx, "charge", func(context.Context) (string, error) {
					runs++
					return "receipt-1", nil
				})
				if err != nil {
					return err
				}
				is.Equal(got, "receipt-1") // the record, on every attempt
				if attempts == 1 {
					return errors.New("the mail server is down")
				}
				return nil
			})
			is.Equal(mustRun(t, w, id).Kind, lite.EventFailed)
			is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
			is.Equal(runs, 1)
			steps, err := q.Steps(t.Context(), id)
			is.NoErr(err)
			is.Equal(len(steps), 1)
			is.Equal(steps[0].Generation, int64(1)) // the first lease recorded it
			is.Equal(string(steps[0].Result), `"receipt-1"`)
		})
		t.Run("a reclaim, a release and a new queue on the same file get the record", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, dsn := e.mustOpen(t, clock)
			mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			var runs int
			step := func(ctx context.Context) (int, error) {
				return lite.RunStep(ctx, "s", func(context.Context) (int, error) { runs++; return 42, nil })
			}
			job := mustLeaseOne(t, q, "default")
			v, err := step(lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {}))
			is.NoErr(err)
			is.Equal(v, 42)
			clock.Advance(time.Hour) // the lease lapses
			_, err = q.ReclaimOrphaned(t.Context())
			is.NoErr(err)
			job = mustLeaseOne(t, q, "default")
			v, err = step(lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {}))
			is.NoErr(err)
			is.Equal(v, 42)
			is.NoErr(q.Release(t.Context(), job.Lease()))
			q.Close()
			q2 := e.reopen(t, dsn, clock)
			job = mustLeaseOne(t, q2, "default")
			v, err = step(lite.HandlerContext(t.Context(), q2, job.Lease(), func(error) {}))
			is.NoErr(err)
			is.Equal(v, 42)
			is.Equal(runs, 1)
		})
		t.Run("a step's error is the attempt's, and a permanent one buries the job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 5})
			w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
				_, err := lite.RunStep(ctx, "s", func(context.Context) (int, error) { return 0, lite.Permanent(errors.New("card declined")) })
				return err
			})
			is.Equal(mustRun(t, w, id).Kind, lite.EventFailed)
			is.Equal(mustGet(t, q, id).State, lite.StateDead)
			is.Equal(stepsOf(t, q, id), 0) // a failed step records nothing
		})
		t.Run("a name of lite's own is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			ctx := lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {})
			_, err := lite.RunStep(ctx, "lite:sleep#1", func(context.Context) (int, error) { return 1, nil })
			is.True(errors.Is(err, lite.ErrInvalid))
		})
		t.Run("a name that is not text is refused, and so is such a signal or sleep", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			ctx := lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {})
			for _, name := range []string{"s\xff", "a\x00b"} {
				ran := false
				_, err := lite.RunStep(ctx, name, func(context.Context) (int, error) { ran = true; return 1, nil })
				is.True(errors.Is(err, lite.ErrInvalid))
				is.True(!ran)
				_, err = q.RecordStep(t.Context(), job.Lease(), name, nil)
				is.True(errors.Is(err, lite.ErrInvalid))
				is.True(errors.Is(q.Signal(t.Context(), id, name, nil), lite.ErrInvalid))
				_, err = lite.AwaitSignal(ctx, name, 0)
				is.True(errors.Is(err, lite.ErrInvalid))
				is.True(errors.Is(q.SleepLease(t.Context(), job.Lease(), name, time.Hour), lite.ErrInvalid))
			}
			is.True(errors.Is(q.SleepLease(t.Context(), job.Lease(), "", time.Hour), lite.ErrInvalid))
			is.True(errors.Is(q.SleepLease(t.Context(), job.Lease(), strings.Repeat("n", lite.MaxStepNameBytes+1), time.Hour), lite.ErrInvalid))
			is.Equal(stepsOf(t, q, id), 0)
		})
		t.Run("outside a handler it is refused", func(t *testing.T) {
			is := is.New(t)
			_, err := lite.RunStep(t.Context(), "s", func(context.Context) (int, error) { return 1, nil })
			is.True(errors.Is(err, lite.ErrNotRunning))
		})
	})
}

// TestADurableHandlersCallsAreItsWorkersEvents: each durable call is
// reported as what it was in its attempt (a step run, a step answered
// from its record, a signal taken), and a park says what the job waits
// for, so that a program's metrics can count them (lite/web/metrics).
func TestADurableHandlersCallsAreItsWorkersEvents(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		var mu sync.Mutex
		var seen []string
		w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler), OnEvent: func(ev lite.Event) {
			mu.Lock()
			defer mu.Unlock()
			is.Equal(ev.JobID, id)
			seen = append(seen, string(ev.Kind)+" "+string(ev.Why))
		}})
		is.NoErr(err)
		w.Handle("d", func(ctx context.Context, job *lite.Job) error {
			if _, err := lite.RunStep(ctx, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
				return err
			}
			// Recorded by hand under the run's lease, which its records
			// do not see: the step runs its fn, and the record wins.
			if _, err := q.RecordStep(ctx, job.Lease(), "by hand", []byte("9")); err != nil {
				return err
			}
			if got, err := lite.RunStep(ctx, "by hand", func(context.Context) (int, error) { return 3, nil }); err != nil || got != 9 {
				return fmt.Errorf("by hand: %d, %w", got, err)
			}
			if _, err := lite.RunStepTx(ctx, "b", func(context.Context, *sql.Tx) (int, error) { return 2, nil }); err != nil {
				return err
			}
			if _, err := lite.AwaitSignal(ctx, "go", 0); err != nil {
				return err
			}
			return lite.Sleep(ctx, time.Hour)
		})
		attempt := func() []string {
			t.Helper()
			mustRun(t, w, id)
			mu.Lock()
			defer mu.Unlock()
			out := seen
			seen = nil
			return out
		}
		is.Equal(attempt(), []string{"started ", "step ", "step ", "parked signal"}) // the step by hand is neither
		is.NoErr(q.Signal(t.Context(), id, "go", nil))
		replayed := []string{"step replayed ", "step replayed ", "step replayed "}
		is.Equal(attempt(), slices.Concat([]string{"started "}, replayed, []string{"signal received ", "parked sleep"}))
		clock.Advance(time.Hour)
		is.Equal(attempt(), slices.Concat([]string{"started "}, replayed, []string{"done "}))
	})
}

// TestAStepAfterItsLeaseWasLostRunsNoFn: a run reads its job's records
// once (see recorded); a step must still never run its fn once the run
// knows its lease lost, nor, past a second, where a newer attempt may have
// recorded it.
func TestAStepAfterItsLeaseWasLostRunsNoFn(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, how := range []string{"cancel", "release"} {
			t.Run("after a "+how+" the handler was told of", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, dsn := e.mustOpen(t, clock)
				other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
				w, _, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 1})
				reached, stale := make(chan struct{}), make(chan error, 1)
				var staleRan atomic.Bool
				w.Handle("d", func(ctx context.Context, job *lite.Job) error {
					if _, err := lite.RunStep(ctx, "a", func(context.Context) (int, error) { return 1, nil }); err != nil {
						return err
					}
					if job.Generation == 1 {
						close(reached)
						<-ctx.Done()
					}
					_, err := lite.RunStep(ctx, "b", func(context.Context) (int, error) {
						staleRan.Store(staleRan.Load() || job.Generation == 1)
						return 2, nil
					})
					if job.Generation == 1 {
						stale <- err
					}
					return err
				})
				defer runWorker(t, w)()
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "d"})
				recv(t, reached)
				if how == "cancel" {
					is.NoErr(other.Cancel(t.Context(), id))
				} else {
					_, err := other.ReleaseUnowned(t.Context(), id)
					is.NoErr(err)
				}
				is.True(errors.Is(recv(t, stale), lite.ErrLeaseLost))
				is.True(!staleRan.Load()) // why: its context had ended
			})
		}
		for _, move := range []time.Duration{time.Second, -time.Hour} {
			t.Run(fmt.Sprintf("in a run not told of its loss, once the clock moved %s", move), func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
				old := lite.HandlerContext(t.Context(), q, mustLeaseOne(t, q, "default").Lease(), func(error) {})
				_, err := lite.RunStep(old, "a", func(context.Context) (string, error) { return "old's", nil })
				is.NoErr(err) // its records read, and a recorded
				_, err = q.ReleaseUnowned(t.Context(), id)
				is.NoErr(err)
				newer := lite.HandlerContext(t.Context(), q, mustLeaseOne(t, q, "default").Lease(), func(error) {})
				_, err = lite.RunStep(newer, "b", func(context.Context) (string, error) { return "newer's", nil })
				is.NoErr(err)
				clock.Advance(move)
				ran := false
				got, err := lite.RunStep(old, "b", func(context.Context) (string, error) { ran = true; return "old's", nil })
				is.NoErr(err)
				is.True(!ran) // why: read again, the newer attempt's record
				is.Equal(got, "newer's")
			})
		}
	})
}

func TestAStaleLeaseRecordsNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a step from a released lease runs but records nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			ctx, told := staleContext(t, q, id)
			_, err := lite.RunStep(ctx, "s", func(context.Context) (int, error) { return 1, nil })
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.True(told.Load()) // the handler's context is cancelled
			is.Equal(stepsOf(t, q, id), 0)
		})
		t.Run("a step whose lease is lost while it runs says the lease was lost", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			// lostRun is a handler's context on job, and what loses its
			// lease as the lost-lease watch does: by a release, and the
			// context cancelled with the loss as its cause. fn sees only
			// that its context ended.
			lostRun := func(job *lite.Job) (context.Context, func()) {
				ctx, lose := context.WithCancelCause(t.Context())
				t.Cleanup(func() { lose(nil) })
				return lite.HandlerContext(ctx, q, job.Lease(), func(error) {}), func() {
					_, err := q.ReleaseUnowned(t.Context(), id)
					is.NoErr(err)
					lose(&lite.LeaseLostError{JobID: id, Generation: job.Generation})
				}
			}
			hctx, loseIt := lostRun(job)
			_, err := lite.RunStep(hctx, "s", func(ctx context.Context) (int, error) {
				loseIt()
				return 0, ctx.Err()
			})
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(stepsOf(t, q, id), 0)
			if e.name == "sqlite" {
				return // why: RunStepTx's fn holds the file, so no release lands while it runs
			}
			hctx, loseIt = lostRun(mustLeaseOne(t, q, "default"))
			_, err = lite.RunStepTx(hctx, "s", func(ctx context.Context, tx *sql.Tx) (int, error) {
				loseIt()
				_, err := tx.ExecContext(ctx, "select 1")
				return 0, err
			})
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(stepsOf(t, q, id), 0)
		})
		t.Run("a step after its own lease's ack records nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			is.NoErr(q.AckDone(t.Context(), job.Lease(), nil))
			_, err := q.RecordStep(t.Context(), job.Lease(), "s", []byte("1"))
			is.True(errors.Is(err, lite.ErrLeaseLost))
			_, ok, err := q.StepResult(t.Context(), id, "s")
			is.NoErr(err)
			is.True(!ok)
		})
		t.Run("a park after its own lease's ack changes nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			is.NoErr(q.AckDone(t.Context(), job.Lease(), nil))
			err := lite.Park(t.Context(), q, job.Lease(), &lite.ParkError{Until: time.Now().Add(time.Hour), Reason: lite.ParkedSleep})
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		})
		t.Run("a stale step never overwrites a newer record", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			old := mustLeaseOne(t, q, "default")
			is.NoErr(q.Release(t.Context(), old.Lease()))
			current := mustLeaseOne(t, q, "default")
			_, err := q.RecordStep(t.Context(), current.Lease(), "s", []byte(`"new"`))
			is.NoErr(err)
			_, err = q.RecordStep(t.Context(), old.Lease(), "s", []byte(`"stale"`))
			is.True(errors.Is(err, lite.ErrLeaseLost))
			got, ok, err := q.StepResult(t.Context(), id, "s")
			is.NoErr(err)
			is.True(ok)
			is.Equal(string(got), `"new"`)
		})
		t.Run("a stale lease records no step while a newer lease runs the job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			old := mustLeaseOne(t, q, "default")
			is.NoErr(q.Release(t.Context(), old.Lease()))
			mustLeaseOne(t, q, "default")
			_, err := q.RecordStep(t.Context(), old.Lease(), "s", []byte(`"stale"`))
			is.True(errors.Is(err, lite.ErrLeaseLost))
			_, ok, err := q.StepResult(t.Context(), id, "s")
			is.NoErr(err)
			is.True(!ok)
		})
		t.Run("a stale RunStepTx rolls its rows back", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			_, err := q.DB().ExecContext(t.Context(), `create table notes (body text)`)
			is.NoErr(err)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			ctx, _ := staleContext(t, q, id)
			_, err = lite.RunStepTx(ctx, "s", func(ctx context.Context, tx *sql.Tx) (int, error) {
				_, err := tx.ExecContext(ctx, `insert into notes values ('stale')`)
				return 1, err
			})
			is.True(errors.Is(err, lite.ErrLeaseLost))
			var n int
			is.NoErr(q.DB().QueryRowContext(t.Context(), `select count(*) from notes`).Scan(&n))
			is.Equal(n, 0) // the app's row went with the step
		})
		t.Run("a stale sleep records no checkpoint", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			ctx, _ := staleContext(t, q, id)
			is.True(errors.Is(lite.Sleep(ctx, time.Hour), lite.ErrLeaseLost))
			is.Equal(stepsOf(t, q, id), 0)
		})
		t.Run("a stale park changes nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			old := mustLeaseOne(t, q, "default")
			is.NoErr(q.Release(t.Context(), old.Lease()))
			current := mustLeaseOne(t, q, "default")
			err := lite.Park(t.Context(), q, old.Lease(), &lite.ParkError{Until: time.Now().Add(time.Hour), Reason: lite.ParkedSleep})
			is.True(errors.Is(err, lite.ErrLeaseLost))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateRunning)
			is.Equal(j.Generation, current.Generation)
			is.Equal(j.Parked, "")
		})
		t.Run("a stale await consumes no signal", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("yes")))
			ctx, _ := staleContext(t, q, id)
			_, err := lite.AwaitSignal(ctx, "approved", 0)
			is.True(errors.Is(err, lite.ErrLeaseLost))
			job := mustLeaseOne(t, q, "default")
			got, err := lite.AwaitSignal(lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {}), "approved", 0)
			is.NoErr(err)
			is.Equal(string(got), "yes") // still there for the current lease
		})
	})
}

func TestRunStepTxCommitsTheAppsRowsWithTheRecord(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		_, err := q.DB().ExecContext(t.Context(), `create table notes (body text)`)
		is.NoErr(err)
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 3})
		attempts := 0
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			attempts++
			_, err := lite.RunStepTx(ctx, "note", func(ctx context.Context, tx *sql.Tx) (int, error) {
				_, err := tx.ExecContext(ctx, `insert into notes values ('once')`)
				return 1, err
			})
			if err == nil && attempts == 1 {
				return errors.New("later trouble")
			}
			return err
		})
		is.Equal(mustRun(t, w, id).Kind, lite.EventFailed)
		is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
		var n int
		is.NoErr(q.DB().QueryRowContext(t.Context(), `select count(*) from notes`).Scan(&n))
		is.Equal(n, 1)
	})
}

// TestAStepsBoundsCountWhatCommittedWhileItWaitedForItsRow: on
// PostgreSQL a step's record locks its job's row first; steps of one run
// that waited for that lock together (a run recording from several
// goroutines) must each count what the others committed meanwhile.
func TestAStepsBoundsCountWhatCommittedWhileItWaitedForItsRow(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := t.Context()
	q, _ := e.mustOpen(t, newFakeClock())
	id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	job := mustLeaseOne(t, q, "default")
	_, err := q.DB().ExecContext(ctx, `with recursive n(i) as (select 1 union all select i + 1 from n where i < $1)
insert into lite_steps (job_id, name, generation, result, recorded_at) select $2, 'seed ' || i, 1, ''::bytea, 0 from n`,
		lite.MaxSteps-1, id)
	is.NoErr(err)
	// The row held, so that the steps all wait for it, then let go.
	holder, err := q.DB().BeginTx(ctx, nil)
	is.NoErr(err)
	var pid int
	is.NoErr(holder.QueryRowContext(ctx, `select pg_backend_pid() from lite_jobs where id = $1 for no key update`, id).Scan(&pid))
	const n = 4
	results := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, results[i] = q.RecordStep(ctx, job.Lease(), fmt.Sprint("late ", i), nil) })
	}
	for waiting := 0; waiting < n; { // the first waits for the holder, the rest for the first
		is.NoErr(q.DB().QueryRowContext(ctx, `with recursive blocked(pid) as (
    select pid from pg_stat_activity where $1 = any(pg_blocking_pids(pid))
    union select a.pid from pg_stat_activity a join blocked b on b.pid = any(pg_blocking_pids(a.pid)))
select count(*) from blocked`, pid).Scan(&waiting))
	}
	is.NoErr(holder.Rollback())
	wg.Wait()
	recorded := 0
	for _, err := range results {
		if err == nil {
			recorded++
		} else {
			is.True(errors.Is(err, lite.ErrStepsFull))
		}
	}
	is.Equal(recorded, 1)
	is.Equal(stepsOf(t, q, id), lite.MaxSteps)
}

// TestLeaseStepAnswersOnlyTheRunThatHoldsTheJob: `lite step` reads its
// record, or learns it must run the step, with LeaseStep; a run that no
// longer holds its job (released, or ended under the same lease) gets the
// loss, not the record, and runs nothing.
func TestLeaseStepAnswersOnlyTheRunThatHoldsTheJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		released := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"default"}, Max: 2})
		is.NoErr(err)
		is.Equal(len(jobs), 2)
		for _, j := range jobs { // leased again: a job's first lease reads no records
			_, err := q.ReleaseUnowned(ctx, j.ID)
			is.NoErr(err)
		}
		jobs, err = q.Lease(ctx, lite.LeaseRequest{Queues: []string{"default"}, Max: 2})
		is.NoErr(err)
		is.Equal(len(jobs), 2)
		for _, j := range jobs {
			_, err := q.RecordStep(ctx, j.Lease(), "a", nil)
			is.NoErr(err)
			// A shell command's sleep and wait, recorded as it holds the job.
			is.NoErr(q.SleepLease(ctx, j.Lease(), "s", 0))
			is.NoErr(q.Signal(ctx, j.ID, "x", []byte("go")))
			got, err := q.AwaitSignalLease(ctx, j.Lease(), "x", 0)
			is.NoErr(err)
			is.Equal(string(got), "go")
			b, ok, err := q.LeaseStep(ctx, j.Lease(), "a")
			is.NoErr(err)
			is.True(ok)
			is.Equal(b, []byte{}) // an empty result, as on either engine
			_, ok, err = q.LeaseStep(ctx, j.Lease(), "b")
			is.NoErr(err)
			is.True(!ok)
		}
		_, err = q.ReleaseUnowned(ctx, released)
		is.NoErr(err)
		is.Equal(mustLeaseOne(t, q, "default").ID, released) // running again, under a newer lease
		is.NoErr(q.AckDone(ctx, jobs[1].Lease(), nil))       // the other ended under its own lease
		for _, j := range jobs {
			for _, name := range []string{"a", "b"} {
				_, ok, err := q.LeaseStep(ctx, j.Lease(), name)
				is.True(errors.Is(err, lite.ErrLeaseLost))
				is.True(!ok)
			}
			// Recorded, but not for a run that lost its job.
			is.True(errors.Is(q.SleepLease(ctx, j.Lease(), "s", 0), lite.ErrLeaseLost))
			got, err := q.AwaitSignalLease(ctx, j.Lease(), "x", 0)
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(got, []byte(nil))
		}
		_, _, err = q.LeaseStep(ctx, lite.Lease{JobID: 999, Generation: 1}, "a")
		is.True(errors.Is(err, lite.ErrLeaseLost)) // a job that is gone
	})
}

func TestStepsAreBounded(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("in count", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			// All but the last step in one statement: a thousand writes
			// of their own take minutes under the race detector.
			_, err := q.DB().ExecContext(t.Context(), q.Rebind(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
insert into lite_steps (job_id, name, generation, result, recorded_at) select ?, 'seed ' || i, 1, ?, 0 from n`),
				lite.MaxSteps-1, id, []byte{})
			is.NoErr(err)
			_, err = q.RecordStep(t.Context(), job.Lease(), "the last", nil)
			is.NoErr(err)
			_, err = q.RecordStep(t.Context(), job.Lease(), "one more", nil)
			is.True(errors.Is(err, lite.ErrStepsFull))
			is.Equal(stepsOf(t, q, id), lite.MaxSteps)
		})
		t.Run("in bytes", func(t *testing.T) { testStepBytesBound(t, e) })
	})
}

// testStepBytesBound fills a job's steps with results as large as a
// step takes until they are over MaxStepsBytes.
func testStepBytesBound(t *testing.T, e testEngine) {
	is := is.New(t)
	q, _ := e.mustOpen(t, newFakeClock())
	id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	job := mustLeaseOne(t, q, "default")
	big := make([]byte, lite.DefaultMaxPayloadBytes)
	var err error
	n := 0
	for ; n < lite.MaxStepsBytes/len(big)+1 && err == nil; n++ {
		_, err = q.RecordStep(t.Context(), job.Lease(), "s"+string(rune('a'+n)), big)
	}
	is.True(errors.Is(err, lite.ErrStepsFull))
	is.Equal(n, lite.MaxStepsBytes/len(big)+1) // the one past the bytes
	steps, err := q.Steps(t.Context(), id)
	is.NoErr(err)
	is.Equal(len(steps), lite.MaxStepsBytes/len(big))
}

func TestSleepParksTheJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 1})
		var before, after int
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			if _, err := lite.RunStep(ctx, "before", func(context.Context) (int, error) { before++; return 1, nil }); err != nil {
				return err
			}
			if err := lite.Sleep(ctx, time.Hour); err != nil {
				return err
			}
			after++
			return nil
		})
		w.Handle("other", func(context.Context, *lite.Job) error { return nil })
		ev := mustRun(t, w, id)
		is.Equal(ev.Kind, lite.EventParked)
		is.True(ev.NextRunAt.Equal(clock.Now().Add(time.Hour)))
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateAvailable)
		is.Equal(j.Parked, lite.ParkedSleep)
		sleeping, err := q.List(t.Context(), lite.ListFilter{Parked: lite.ParkedSleep})
		is.NoErr(err)
		is.Equal(len(sleeping), 1) // listed as sleeping
		awaiting, err := q.List(t.Context(), lite.ListFilter{Parked: lite.ParkedSignal})
		is.NoErr(err)
		is.Equal(len(awaiting), 0)
		is.Equal(j.Attempts, 0) // no attempt spent: MaxAttempts 1 still runs it
		other := mustEnqueue(t, q, lite.NewJob{Kind: "other"})
		rep, err := w.RunOnce(t.Context()) // the slot is free: the other job runs, the sleeper does not
		is.NoErr(err)
		is.Equal(rep.Done, 1)
		is.Equal(mustGet(t, q, other).State, lite.StateDone)
		clock.Advance(time.Hour)
		sleeping, err = q.List(t.Context(), lite.ListFilter{Parked: lite.ParkedSleep})
		is.NoErr(err)
		is.Equal(len(sleeping), 0) // its time has come: ready, not sleeping, though its marker stays
		rep, err = w.RunOnce(t.Context())
		is.NoErr(err)
		is.Equal(rep.Done, 1)
		is.Equal(mustGet(t, q, id).State, lite.StateDone)
		is.Equal(mustGet(t, q, id).Parked, "") // its lease cleared the marker
		is.Equal(before, 1)
		is.Equal(after, 1)
	})
}

// TestASignalThatCommitsWhileItsJobParksWakesIt sends a signal whose
// transaction holds the job's row (as Signal's does) from after the
// handler found no signal until the worker's park waits for that row.
// On PostgreSQL the park read whether a signal waits in the statement
// that waited for the row, and so from before the signal committed: the
// job parked awaiting a signal that was there, for good with no timeout.
func TestASignalThatCommitsWhileItsJobParksWakesIt(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := t.Context()
	q, _ := e.mustOpen(t, newFakeClock())
	id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	var (
		signal *sql.Tx
		pid    atomic.Int64 // the signal's session, once it holds the row
	)
	w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
		_, park := lite.AwaitSignal(ctx, "approved", 0)
		if errors.Is(park, lite.ErrParked) && signal == nil {
			// Signal's transaction, its commit held: the row, then the signal.
			var err error
			signal, err = q.DB().BeginTx(ctx, nil)
			is.NoErr(err)
			var session int64
			is.NoErr(signal.QueryRowContext(ctx, `select pg_backend_pid() from lite_jobs where id = $1 for update`, id).Scan(&session))
			_, err = signal.ExecContext(ctx, `insert into lite_signals (job_id, name, payload, sent_at) values ($1, 'approved', 'by ada', 0)`, id)
			is.NoErr(err)
			pid.Store(session)
		}
		return park
	})
	parked := make(chan lite.Event, 1)
	go func() {
		ev, err := w.RunJob(ctx, id)
		is.NoErr(err)
		parked <- ev
	}()
	for pid.Load() == 0 { // until the signal's transaction holds the row
		time.Sleep(10 * time.Millisecond)
	}
	waitUntilBlockedBy(t, q, pid.Load()) // and the park waits for it
	is.NoErr(signal.Commit())
	is.Equal((<-parked).Kind, lite.EventParked)
	j := mustGet(t, q, id)
	is.Equal(j.Parked, "") // not parked: the signal is there to consume
	is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
}

func TestStatsCountParkedJobsApart(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		sleeper := mustEnqueue(t, q, lite.NewJob{Kind: "d", Payload: []byte(`"sleep"`)})
		awaiter := mustEnqueue(t, q, lite.NewJob{Kind: "d", Payload: []byte(`"await"`)})
		mustEnqueue(t, q, lite.NewJob{Kind: "d", Queue: "other"}) // plain, in a queue of its own
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			if string(job.Payload) == `"sleep"` {
				return lite.Sleep(ctx, time.Hour)
			}
			_, err := lite.AwaitSignal(ctx, "approved", 0)
			return err
		})
		is.Equal(mustRun(t, w, sleeper).Kind, lite.EventParked)
		is.Equal(mustRun(t, w, awaiter).Kind, lite.EventParked)

		parked := func() map[string][3]int64 { // per queue: available, sleeping, awaiting, from Stats and Backlog alike
			stats, err := q.Stats(t.Context())
			is.NoErr(err)
			backlog, err := q.Backlog(t.Context())
			is.NoErr(err)
			got := map[string][3]int64{}
			for _, s := range stats {
				got[s.Queue] = [3]int64{s.Counts[lite.StateAvailable], s.Sleeping, s.Awaiting}
			}
			for _, s := range backlog {
				is.Equal([3]int64{s.Counts[lite.StateAvailable], s.Sleeping, s.Awaiting}, got[s.Queue])
			}
			return got
		}
		is.Equal(parked(), map[string][3]int64{"default": {2, 1, 1}, "other": {1, 0, 0}})
		clock.Advance(time.Hour) // the sleep is over: ready, though no worker took it yet
		is.Equal(mustGet(t, q, sleeper).Parked, lite.ParkedSleep)
		is.Equal(parked(), map[string][3]int64{"default": {2, 0, 1}, "other": {1, 0, 0}})
		clock.Advance(-time.Hour)
		is.NoErr(q.Signal(t.Context(), awaiter, "approved", nil)) // woken: available, parked no more
		is.Equal(parked(), map[string][3]int64{"default": {2, 1, 0}, "other": {1, 0, 0}})
		is.NoErr(q.Cancel(t.Context(), sleeper)) // cancelled, its marker kept: counted no more
		is.Equal(mustGet(t, q, sleeper).Parked, lite.ParkedSleep)
		is.Equal(parked(), map[string][3]int64{"default": {1, 0, 0}, "other": {1, 0, 0}})
		is.NoErr(q.Retry(t.Context(), sleeper)) // ready now: parked no more
		is.Equal(mustGet(t, q, sleeper).Parked, "")
		is.Equal(parked(), map[string][3]int64{"default": {2, 0, 0}, "other": {1, 0, 0}})
	})
}

func TestSignals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		awaiter := func(got *[]string) lite.Handler {
			return func(ctx context.Context, job *lite.Job) error {
				p, err := lite.AwaitSignal(ctx, "approved", time.Hour)
				switch {
				case errors.Is(err, lite.ErrSignalTimeout):
					*got = append(*got, "timeout")
					return nil
				case err != nil:
					return err
				}
				*got = append(*got, string(p))
				return nil
			}
		}
		t.Run("a signal sent before the wait is kept", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("by ada")))
			var got []string
			w := durableWorker(t, q, awaiter(&got))
			is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
			is.Equal(got, []string{"by ada"})
		})
		t.Run("a job keeps at most MaxSignals unconsumed, and one consumed makes room", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			// All but the last in one statement: a thousand writes of their
			// own take long under the race detector.
			_, err := q.DB().ExecContext(t.Context(), q.Rebind(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
insert into lite_signals (job_id, name, payload, sent_at) select ?, 'approved', ?, 0 from n`),
				lite.MaxSignals-1, id, []byte("seed"))
			is.NoErr(err)
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("the last")))
			err = q.Signal(t.Context(), id, "other", []byte("one more"))
			is.True(errors.Is(err, lite.ErrSignalsFull))
			is.Equal(signalsOf(t, q, id), lite.MaxSignals) // the one refused sent nothing

			var got []byte
			w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
				got, err = lite.AwaitSignal(ctx, "approved", time.Hour)
				is.NoErr(err)
				return errors.New("not yet") // the job stays unfinished, to be signalled again
			})
			is.Equal(mustRun(t, w, id).Kind, lite.EventFailed)
			is.Equal(string(got), "seed") // the oldest first
			is.NoErr(q.Signal(t.Context(), id, "other", []byte("room again")))
			is.Equal(signalsOf(t, q, id), lite.MaxSignals+1) // the consumed one is kept, counted out
		})
		t.Run("a wait for a name no signal can have is refused, not parked", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d", MaxAttempts: 1})
			var awaitErr error
			w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
				_, awaitErr = lite.AwaitSignal(ctx, "", time.Hour)
				return awaitErr
			})
			mustRun(t, w, id)
			is.True(errors.Is(awaitErr, lite.ErrInvalid))
			j := mustGet(t, q, id)
			is.Equal(j.Parked, "") // why: Signal refuses the empty name, so nothing could ever wake it
			is.Equal(j.State, lite.StateDead)
		})
		t.Run("a signal after the wait wakes the parked job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			var got []string
			w := durableWorker(t, q, awaiter(&got))
			is.Equal(mustRun(t, w, id).Kind, lite.EventParked)
			j := mustGet(t, q, id)
			is.Equal(j.Parked, lite.ParkedSignal)
			is.Equal(j.ParkedOn, "approved")
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep.Leased, 0) // not due before its signal
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("by bob")))
			is.Equal(mustGet(t, q, id).Parked, "")
			rep, err = w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep.Done, 1)
			is.Equal(got, []string{"by bob"})
		})
		t.Run("a signal between the await and its park wakes the job at once", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			_, err := lite.AwaitSignal(lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {}), "approved", 0)
			var p *lite.ParkError
			is.True(errors.As(err, &p))
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("just in time")))
			is.NoErr(lite.Park(t.Context(), q, job.Lease(), p))
			j := mustGet(t, q, id)
			is.Equal(j.Parked, "")         // not parked: its signal is there
			is.True(j.RunAt.Year() < 9999) // due now, not never
		})
		t.Run("a signal of another name does not wake it", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			var got []string
			w := durableWorker(t, q, awaiter(&got))
			is.Equal(mustRun(t, w, id).Kind, lite.EventParked)
			is.NoErr(q.Signal(t.Context(), id, "rejected", nil))
			is.Equal(mustGet(t, q, id).Parked, lite.ParkedSignal)
		})
		t.Run("the timeout passes with no signal", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			var got []string
			w := durableWorker(t, q, awaiter(&got))
			is.Equal(mustRun(t, w, id).Kind, lite.EventParked)
			clock.Advance(time.Hour)
			rep, err := w.RunOnce(t.Context())
			is.NoErr(err)
			is.Equal(rep.Done, 1)
			is.Equal(got, []string{"timeout"})
		})
		t.Run("a finished or missing job is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			is.NoErr(q.Cancel(t.Context(), id))
			is.True(errors.Is(q.Signal(t.Context(), id, "approved", nil), lite.ErrInvalidState))
			is.True(errors.Is(q.Signal(t.Context(), id+100, "approved", nil), lite.ErrNotFound))
		})
		t.Run("one signal is consumed once by two concurrent awaits", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			is.NoErr(q.Signal(t.Context(), id, "approved", []byte("once")))
			job := mustLeaseOne(t, q, "default")
			ctx := lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {})
			var wg sync.WaitGroup
			var payloads, parked atomic.Int32
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := lite.AwaitSignal(ctx, "approved", 0)
					switch {
					case err == nil:
						payloads.Add(1)
					case errors.Is(err, lite.ErrParked):
						parked.Add(1)
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			is.Equal(payloads.Load(), int32(1))
			is.Equal(parked.Load(), int32(1))
		})
	})
}

// reopen opens dsn again, as a restarted process does.
func (e testEngine) reopen(t *testing.T, dsn string, clock *fakeClock) *lite.Queue {
	t.Helper()
	q, err := lite.Open(t.Context(), dsn, lite.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func TestAJobsStepsAndSignalsGoWithIt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		is.NoErr(q.Signal(t.Context(), id, "unread", []byte("x")))
		job := mustLeaseOne(t, q, "default")
		_, err := q.RecordStep(t.Context(), job.Lease(), "s", []byte("1"))
		is.NoErr(err)
		is.NoErr(q.AckDone(t.Context(), job.Lease(), nil))
		n, err := q.Purge(t.Context(), clock.Now().Add(time.Hour))
		is.NoErr(err)
		is.Equal(n, int64(1))
		var left int
		is.NoErr(q.DB().QueryRowContext(t.Context(), `select (select count(*) from lite_steps) + (select count(*) from lite_signals)`).Scan(&left))
		is.Equal(left, 0) // deleted with the job (on delete cascade)
	})
}

// stepsOf is how many steps job id recorded.
// signalsOf counts the signals job id keeps, consumed or not.
func signalsOf(t *testing.T, q *lite.Queue, id int64) int {
	t.Helper()
	var n int
	if err := q.DB().QueryRowContext(t.Context(), q.Rebind(`select count(*) from lite_signals where job_id = ?`), id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func stepsOf(t *testing.T, q *lite.Queue, id int64) int {
	t.Helper()
	steps, err := q.Steps(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return len(steps)
}

// TestASignalFromAnotherHostWakesItsWaitingJob sends the signal through
// a second Queue on the same database, as another process or host does:
// no in-process wake-up reaches the worker, whose poll is an hour away.
// Only the file's data version (SQLite) or the server's notification
// (PostgreSQL) can wake it. On PostgreSQL the signal left the job
// available, so no notification fired and the job waited for a poll.
func TestASignalFromAnotherHostWakesItsWaitingJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, dsn := e.mustOpen(t, nil)
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{PollInterval: time.Hour})
		idle := idleSignals(w)
		w.Handle("d", func(ctx context.Context, job *lite.Job) error {
			payload, err := lite.AwaitSignal(ctx, "go", 0)
			if err != nil {
				return err
			}
			lite.SetResult(ctx, payload)
			return nil
		})
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		runWorker(t, w)
		is.Equal(ev.await(t, lite.EventParked).JobID, id)
		recv(t, idle)

		other, err := lite.Open(t.Context(), dsn, lite.Options{})
		is.NoErr(err)
		defer other.Close()
		is.NoErr(other.Signal(t.Context(), id, "go", []byte(`"from afar"`)))
		done := ev.await(t, lite.EventDone)
		is.Equal(done.JobID, id)
		is.Equal(string(mustGet(t, q, id).Result), `"from afar"`)
	})
}
