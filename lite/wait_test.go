package lite_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// waitResult is what a waiter in a goroutine got.
type waitResult struct {
	job *lite.Job
	err error
}

// waitInBackground starts Wait for id and returns where its outcome comes.
func waitInBackground(ctx context.Context, q *lite.Queue, id int64) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		j, err := q.Wait(ctx, id)
		ch <- waitResult{j, err}
	}()
	return ch
}

// noSafetyPoll leaves waiters nothing but their wake-ups until the test
// ends: a wait that ends then was woken, not found by a poll.
func noSafetyPoll(t *testing.T) {
	t.Cleanup(lite.SetWaitPolls(time.Hour, time.Hour))
}

// watching holds q's watch of other processes' commits up until the test
// ends, with a waiter on a job that never finishes, and returns once it
// reported its first commit: on a server, its listener is then up, so a
// notification sent later wakes waiters, and only a notification can.
func watching(t *testing.T, q *lite.Queue) {
	t.Helper()
	id := mustEnqueue(t, q, lite.NewJob{Queue: "never"})
	ctx, stop := context.WithCancel(t.Context())
	waited := waitInBackground(ctx, q, id)
	t.Cleanup(func() { stop(); <-waited })
	deadline := time.Now().Add(guard)
	for lite.WaitReports(q) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the watch reported nothing")
		}
		mustEnqueue(t, q, lite.NewJob{Queue: "never"}) // a commit the file's watch reports, once it is up
		time.Sleep(5 * time.Millisecond)
	}
}

func got(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(guard):
		t.Fatal("the wait did not end")
		return waitResult{}
	}
}

func TestWaitEndsWithTheFinishedJob(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		noSafetyPoll(t)
		t.Run("a result comes through a failed attempt that retries", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 2})
			waited := waitInBackground(t.Context(), q, id)
			j := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("flaky")))
			clock.Advance(2 * time.Hour)
			j = mustLeaseOne(t, q, "q")
			is.NoErr(q.AckDone(t.Context(), j.Lease(), []byte("ok")))
			r := got(t, waited)
			is.NoErr(r.err)
			is.Equal(r.job.State, lite.StateDone)
			is.Equal(string(r.job.Result), "ok")
			is.Equal(r.job.Attempts, 2) // the failed attempt was no end
		})
		t.Run("a job that dies ends the wait dead", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
			waited := waitInBackground(t.Context(), q, id)
			j := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("boom")))
			r := got(t, waited)
			is.NoErr(r.err)
			is.Equal(r.job.State, lite.StateDead)
			_, err := lite.WaitResult[string](t.Context(), q, id)
			is.True(errors.Is(err, lite.ErrDead))
			is.Equal(err.Error(), "job 1 dead after 1 of 1 attempts: boom")
		})
		t.Run("a cancel ends the wait cancelled", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			waited := waitInBackground(t.Context(), q, id)
			is.NoErr(q.Cancel(t.Context(), id))
			r := got(t, waited)
			is.NoErr(r.err)
			is.Equal(r.job.State, lite.StateCancelled)
			_, err := lite.WaitResult[string](t.Context(), q, id)
			is.True(errors.Is(err, lite.ErrCancelled))
		})
		t.Run("a job finished by another process wakes the waiter", func(t *testing.T) {
			is := is.New(t)
			q, dsn := e.mustOpen(t, nil)
			other := mustOpenOpts(t, dsn, lite.Options{}) // its commits reach q only through the file or the server
			watching(t, q)
			id := mustEnqueue(t, other, lite.NewJob{Queue: "q"})
			waited := waitInBackground(t.Context(), q, id)
			j := mustLeaseOne(t, other, "q")
			is.NoErr(other.AckDone(t.Context(), j.Lease(), []byte("from afar")))
			r := got(t, waited)
			is.NoErr(r.err)
			is.Equal(string(r.job.Result), "from afar")
		})
		t.Run("a job cancelled by another process wakes the waiter", func(t *testing.T) {
			is := is.New(t)
			q, dsn := e.mustOpen(t, nil)
			other := mustOpenOpts(t, dsn, lite.Options{})
			watching(t, q)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			waited := waitInBackground(t.Context(), q, id)
			is.NoErr(other.Cancel(t.Context(), id))
			is.Equal(got(t, waited).job.State, lite.StateCancelled)
		})
	})
}

func TestWaitForAJobThatIsGone(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		noSafetyPoll(t)
		t.Run("a job that never existed is not found at once", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			_, err := q.Wait(t.Context(), 999)
			is.True(errors.Is(err, lite.ErrNotFound))
			is.Equal(err.Error(), "wait: job 999: job not found")
		})
		t.Run("a job purged by another process before the waiter saw it finish is not found", func(t *testing.T) {
			is := is.New(t)
			if e.name == "postgres" {
				// A commit of one's own SQL notifies no one on a server:
				// the safety poll finds it. A file's WAL shows every commit.
				defer lite.SetWaitPolls(50*time.Millisecond, time.Hour)()
			}
			q, dsn := e.mustOpen(t, nil)
			other := mustOpenOpts(t, dsn, lite.Options{})
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			waited := waitInBackground(t.Context(), q, id)
			// Finished and purged in one commit, as a retention with no
			// delay would: the waiter can never see it done.
			tx, err := other.DB().BeginTx(t.Context(), nil)
			is.NoErr(err)
			_, err = tx.Exec(`update lite_jobs set state = 'done', finished_at = 0 where id = $1`, id)
			is.NoErr(err)
			_, err = tx.Exec(`delete from lite_jobs where id = $1`, id)
			is.NoErr(err)
			is.NoErr(tx.Commit())
			r := got(t, waited)
			is.True(errors.Is(r.err, lite.ErrNotFound)) // not a hang
		})
	})
}

func TestWaitEndsWithTheCallersContext(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		noSafetyPoll(t)
		q, _ := e.mustOpen(t, nil)
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		ctx, cancel := context.WithCancelCause(t.Context())
		waited := waitInBackground(ctx, q, id)
		stop := errors.New("the caller gave up")
		cancel(stop)
		r := got(t, waited)
		is.True(errors.Is(r.err, stop))                            // the cause, as the caller gave it
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)     // the job goes on
		is.Equal(mustLeaseOne(t, q, "q").State, lite.StateRunning) // and runs
	})
}

func TestManyWaiters(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		noSafetyPoll(t)
		q, _ := e.mustOpen(t, nil)
		ids := make([]int64, 5)
		for i := range ids {
			ids[i] = mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		}
		const waiters = 50
		var wg sync.WaitGroup
		results := make(chan waitResult, waiters)
		for i := range waiters {
			wg.Go(func() {
				j, err := q.Wait(t.Context(), ids[i%len(ids)])
				results <- waitResult{j, err}
			})
		}
		all := make(chan []*lite.Job, 1)
		go func() {
			jobs, err := q.WaitAll(t.Context(), append(ids, ids[0])) // a repeated id is one job
			if err != nil {
				t.Error(err)
			}
			all <- jobs
		}()
		anyOne := make(chan *lite.Job, 1)
		go func() {
			j, err := q.WaitAny(t.Context(), ids)
			if err != nil {
				t.Error(err)
			}
			anyOne <- j
		}()
		for range ids {
			j := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckDone(t.Context(), j.Lease(), []byte{byte(j.ID)}))
		}
		wg.Wait()
		close(results)
		for r := range results {
			is.NoErr(r.err)
			is.Equal(r.job.Result, []byte{byte(r.job.ID)})
		}
		jobs := <-all
		is.Equal(len(jobs), len(ids)+1)
		for i, j := range jobs {
			is.Equal(j.ID, append(ids, ids[0])[i]) // in the order asked
			is.Equal(j.State, lite.StateDone)
		}
		is.Equal((<-anyOne).State, lite.StateDone)
	})
}

type square struct{ N int }

func (square) Kind() string { return "square" }

func TestWaitResultOfATypedHandler(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		noSafetyPoll(t)
		q, _ := e.mustOpen(t, nil)
		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(ctx context.Context, _ *lite.Job, a square) error {
			out, _ := json.Marshal(map[string]int{"square": a.N * a.N})
			lite.SetResult(ctx, out)
			return nil
		})
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx) }()
		defer func() { stop(); is.NoErr(<-done) }()
		id, err := lite.EnqueueArgs(t.Context(), q, square{N: 7})
		is.NoErr(err)
		res, err := lite.WaitResult[map[string]int](t.Context(), q, id)
		is.NoErr(err)
		is.Equal(res["square"], 49)
	})
}
