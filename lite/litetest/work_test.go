package litetest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

// start is the fake clocks' first reading: fixed, so every run is alike.
var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// newWorker makes a worker on q, failing the test on an error.
func newWorker(t *testing.T, q *lite.Queue, opts lite.WorkerOptions) *lite.Worker {
	t.Helper()
	w, err := lite.NewWorker(q, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestWork(t *testing.T) {
	t.Run("CommitWithAck writes and a SetResult result commit with the ack", func(t *testing.T) {
		is := is.New(t)
		q := litetest.Open(t)
		ctx := t.Context()
		_, err := q.DB().ExecContext(ctx, `create table greeted (name text not null)`)
		is.NoErr(err)
		handler := func(ctx context.Context, _ *lite.Job, args greet) error {
			lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
				_, err := tx.Exec(`insert into greeted values (?)`, args.Name)
				return err
			})
			lite.SetResult(ctx, []byte("hello "+args.Name))
			return nil
		}
		w := newWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, handler)
		id := enqueue(t, q, greet{Name: "ada"})

		// why: the trap Work exists for; called directly, the handler
		// succeeds and nothing it asked for is written
		is.NoErr(handler(ctx, &lite.Job{ID: id}, greet{Name: "ada"}))
		is.Equal(greeted(t, q), 0)

		ev := litetest.Work(t, w, id)
		is.Equal(ev.Kind, lite.EventDone)
		is.Equal(ev.JobID, id)
		is.Equal(greeted(t, q), 1)
		j, err := q.Get(ctx, id)
		is.NoErr(err)
		is.Equal(j.State, lite.StateDone)
		is.Equal(string(j.Result), "hello ada")
	})

	t.Run("a snooze leaves the job available at the clock's time plus its delay", func(t *testing.T) {
		is := is.New(t)
		clock := litetest.NewClock(start)
		q := litetest.Open(t, lite.Options{Now: clock.Now})
		w := newWorker(t, q, lite.WorkerOptions{})
		runs := 0
		lite.HandleArgs(w, func(context.Context, *lite.Job, greet) error {
			if runs++; runs == 1 {
				return lite.Snooze(time.Hour)
			}
			return nil
		})
		id := enqueue(t, q, greet{Name: "ada"})
		clock.Advance(time.Minute) // the snooze counts from now, not from when it was enqueued

		ev := litetest.Work(t, w, id)
		is.Equal(ev.Kind, lite.EventSnoozed)
		j, err := q.Get(t.Context(), id)
		is.NoErr(err)
		is.Equal(j.State, lite.StateAvailable)
		is.True(j.RunAt.Equal(start.Add(time.Minute + time.Hour)))
		is.Equal(j.Attempts, 0) // a snooze spends no attempt

		is.Equal(litetest.Drain(t, w), lite.Report{}) // not due yet
		clock.Advance(time.Hour)
		is.Equal(litetest.Drain(t, w), lite.Report{Leased: 1, Done: 1})
	})

	t.Run("a handler's failure is the event's, not the test's", func(t *testing.T) {
		is := is.New(t)
		q := litetest.Open(t)
		w := newWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(context.Context, *lite.Job, greet) error { return errors.New("no mailbox") })
		id := enqueue(t, q, greet{Name: "ada"})
		var ev lite.Event
		passes(t, runTB(func(tb testing.TB) { ev = litetest.Work(tb, w, id) }))
		is.Equal(ev.Kind, lite.EventFailed)
		is.Equal(ev.Err.Error(), "no mailbox")
	})

	t.Run("a job that cannot run fails the test, saying why", func(t *testing.T) {
		q := litetest.Open(t)
		w := newWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(context.Context, *lite.Job, greet) error { return nil })
		fails(t, runTB(func(tb testing.TB) { litetest.Work(tb, w, 99) }),
			"litetest.Work: run job 99: job not found")
		id := enqueue(t, q, bill{Customer: 1})
		fails(t, runTB(func(tb testing.TB) { litetest.Work(tb, w, id) }),
			`litetest.Work: run job 1: the worker has no handler for its kind "bill"`)
	})
}

// greeted counts the rows of table greeted.
func greeted(t *testing.T, q *lite.Queue) int {
	t.Helper()
	var n int
	if err := q.DB().QueryRowContext(t.Context(), `select count(*) from greeted`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDrain(t *testing.T) {
	t.Run("with a fake clock, future jobs wait until the clock is advanced", func(t *testing.T) {
		is := is.New(t)
		clock := litetest.NewClock(start)
		q := litetest.Open(t, lite.Options{Now: clock.Now})
		w := newWorker(t, q, lite.WorkerOptions{})
		var names []string
		lite.HandleArgs(w, func(_ context.Context, _ *lite.Job, args greet) error {
			names = append(names, args.Name)
			return nil
		})
		enqueue(t, q, greet{Name: "now"})
		enqueue(t, q, greet{Name: "in an hour"}, lite.NewJob{Delay: time.Hour})

		is.Equal(litetest.Drain(t, w), lite.Report{Leased: 1, Done: 1})
		is.Equal(names, []string{"now"})
		clock.Advance(time.Hour - time.Millisecond)
		is.Equal(litetest.Drain(t, w), lite.Report{})
		clock.Advance(time.Millisecond)
		is.Equal(litetest.Drain(t, w), lite.Report{Leased: 1, Done: 1})
		is.Equal(names, []string{"now", "in an hour"})
	})

	t.Run("it runs batch after batch, and the jobs handlers enqueue", func(t *testing.T) {
		is := is.New(t)
		q := litetest.Open(t, lite.Options{Now: litetest.NewClock(start).Now})
		w := newWorker(t, q, lite.WorkerOptions{Concurrency: 1})
		lite.HandleArgs(w, func(ctx context.Context, _ *lite.Job, args greet) error {
			_, err := lite.EnqueueArgs(ctx, q, bill{Customer: len(args.Name)})
			return err
		})
		lite.HandleArgs(w, func(context.Context, *lite.Job, bill) error { return errors.New("declined") })
		enqueue(t, q, greet{Name: "ada"})
		enqueue(t, q, greet{Name: "bob"})
		// why: one slot, so four batches; a failed bill waits for its backoff,
		// which the clock never reaches
		is.Equal(litetest.Drain(t, w), lite.Report{Leased: 4, Done: 2, Failed: 2})
		litetest.RequireEnqueuedMany(t, q, []bill{{Customer: 3}, {Customer: 3}})
	})

	t.Run("a handler that snoozes for no time fails the test instead of hanging", func(t *testing.T) {
		q := litetest.Open(t)
		w := newWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(context.Context, *lite.Job, greet) error { return lite.Snooze(0) })
		enqueue(t, q, greet{Name: "ada"})
		fails(t, runTB(func(tb testing.TB) { litetest.Drain(tb, w) }),
			"litetest.Drain: 100 batches in a row ended no job",
			"{Leased:100 Done:0 Failed:0 Snoozed:100")
	})

	t.Run("an error fails the test", func(t *testing.T) {
		q := litetest.Open(t)
		w := newWorker(t, q, lite.WorkerOptions{})
		fails(t, runTB(func(tb testing.TB) { litetest.Drain(tb, w) }),
			"litetest.Drain: worker: no handlers registered")
	})
}

func TestDrainAtARateLimit(t *testing.T) {
	setup := func(t *testing.T) (*litetest.Clock, *lite.Queue, *lite.Worker) {
		t.Helper()
		clock := litetest.NewClock(start)
		q := litetest.Open(t, lite.Options{Now: clock.Now})
		if err := q.SetLimits(t.Context(), "mail", lite.Limits{Rate: 2, Per: time.Minute}); err != nil {
			t.Fatal(err)
		}
		w := newWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(context.Context, *lite.Job, greet) error { return nil })
		for range 5 {
			enqueue(t, q, greet{Name: "ada"}, lite.NewJob{Queue: "mail"})
		}
		return clock, q, w
	}

	t.Run("a drain stopped by a rate limit fails, naming the limit and when its window opens", func(t *testing.T) {
		_, _, w := setup(t)
		fails(t, runTB(func(tb testing.TB) { litetest.Drain(tb, w) }),
			`litetest.Drain: ready jobs wait for a rate limit: queue "mail" started its 2 per 1m0s (lite.Limits.Rate)`,
			"opens its next window at 2030-01-02T03:05:05Z", "advance the Clock", "Done:2")
	})

	t.Run("moving the clock to each window drains the rest", func(t *testing.T) {
		is := is.New(t)
		clock, _, w := setup(t)
		for _, want := range []int{2, 2, 1} {
			var rep lite.Report
			runFake(&fakeTB{keepGoing: true}, func(tb testing.TB) { rep = litetest.Drain(tb, w) })
			is.Equal(rep.Done, want) // a window's starts
			clock.Advance(time.Minute)
		}
		passes(t, runTB(func(tb testing.TB) { litetest.Drain(tb, w) })) // nothing is left to wait for
	})

	t.Run("a paused queue's jobs are left alone without a failure", func(t *testing.T) {
		is := is.New(t)
		_, q, w := setup(t)
		is.NoErr(q.Pause(t.Context(), "mail"))
		var rep lite.Report
		passes(t, runTB(func(tb testing.TB) { rep = litetest.Drain(tb, w) }))
		is.Equal(rep, lite.Report{})
	})
}
