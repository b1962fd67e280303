package litetest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
)

// Welcome is a job: mail a new user, once.
type Welcome struct {
	UserID int64  `json:"user_id"`
	Email  string `json:"email"`
}

func (Welcome) Kind() string { return "welcome" }

// signup is code under test: it adds a user and enqueues their Welcome in
// one transaction, so there is a job if and only if there is a user.
func signup(ctx context.Context, q *lite.Queue, email string) (int64, error) {
	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `insert into users (email) values (?)`, email)
	if err != nil {
		return 0, err
	}
	user, err := res.LastInsertId()
	if err != nil {
		return 0, err
	}
	if _, err := lite.EnqueueArgsTx(ctx, q, tx, Welcome{UserID: user, Email: email}); err != nil {
		return 0, err
	}
	return user, tx.Commit()
}

// sendWelcome is a handler under test. It marks the user welcomed in the
// transaction that acks the job, so the mark lands if and only if the
// job is done. Called directly it would return nil and mark nothing.
func sendWelcome(ctx context.Context, _ *lite.Job, args Welcome) error {
	// ... mail args.Email ...
	lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`update users set welcomed = 1 where id = ?`, args.UserID)
		return err
	})
	lite.SetResult(ctx, []byte("mailed "+args.Email))
	return nil
}

// createUsers makes the application's own table, in the queue's file.
func createUsers(t testing.TB, q *lite.Queue) {
	t.Helper()
	_, err := q.DB().ExecContext(t.Context(),
		`create table users (id integer primary key, email text not null, welcomed integer not null default 0)`)
	if err != nil {
		t.Fatal(err)
	}
}

// A test of signup and its handler: what signup enqueued, then the job
// run through a worker as production runs it.
func Example() {
	runTest(func(t testing.TB) { // in your code: func TestSignup(t *testing.T) {
		q := litetest.Open(t)
		createUsers(t, q)

		user, err := signup(t.Context(), q, "ada@example.com")
		if err != nil {
			t.Fatal(err)
		}
		job := litetest.RequireEnqueued(t, q, Welcome{UserID: user, Email: "ada@example.com"})
		fmt.Printf("enqueued a welcome for user %d in queue %s\n", job.Args.UserID, job.Queue)

		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lite.HandleArgs(w, sendWelcome)
		ev := litetest.Work(t, w, job.ID)
		fmt.Println("the run ended:", ev.Kind)

		var welcomed bool
		err = q.DB().QueryRowContext(t.Context(), `select welcomed from users where id = ?`, user).Scan(&welcomed)
		if err != nil {
			t.Fatal(err)
		}
		done, err := q.Get(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("welcomed: %v, result: %s\n", welcomed, done.Result)
	})
	// Output:
	// enqueued a welcome for user 1 in queue default
	// the run ended: done
	// welcomed: true, result: mailed ada@example.com
}

// Assert inside a transaction, before it commits: the Tx forms read
// through it.
func ExampleRequireEnqueuedTx() {
	runTest(func(t testing.TB) {
		q := litetest.Open(t)
		tx, err := q.DB().BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := lite.EnqueueArgsTx(t.Context(), q, tx, Welcome{UserID: 7}); err != nil {
			t.Fatal(err)
		}

		litetest.RequireEnqueuedTx(t, tx, Welcome{UserID: 7})
		litetest.RequireNotEnqueued[Welcome](t, q) // not committed: nothing outside it yet
		fmt.Println("visible inside the transaction only")
	})
	// Output:
	// visible inside the transaction only
}

// A handler that snoozes or fails runs again only once its time has come:
// with a Clock, the test says when that is. Drain runs what is ready.
func ExampleDrain() {
	runTest(func(t testing.TB) {
		clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
		q := litetest.Open(t, lite.Options{Now: clock.Now})
		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mailServerUp := false
		lite.HandleArgs(w, func(context.Context, *lite.Job, Welcome) error {
			if !mailServerUp {
				return lite.Snooze(10 * time.Minute)
			}
			return nil
		})
		if _, err := lite.EnqueueArgs(t.Context(), q, Welcome{UserID: 1}); err != nil {
			t.Fatal(err)
		}

		drain := func() {
			rep := litetest.Drain(t, w)
			fmt.Printf("ran %d: %d done, %d snoozed\n", rep.Leased, rep.Done, rep.Snoozed)
		}
		drain()
		mailServerUp = true
		drain() // the job is not due for ten minutes
		clock.Advance(10 * time.Minute)
		drain()
	})
	// Output:
	// ran 1: 0 done, 1 snoozed
	// ran 0: 0 done, 0 snoozed
	// ran 1: 1 done, 0 snoozed
}

// A durable handler's sleep runs on the test's Clock, and a signal is sent
// as in production: Drain runs what is ready, and a parked job waits,
// holding no slot, until the Clock passes its time or its signal comes.
func ExampleDrain_durable() {
	runTest(func(t testing.TB) {
		clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
		q := litetest.Open(t, lite.Options{Now: clock.Now})
		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lite.HandleArgs(w, func(ctx context.Context, _ *lite.Job, args Welcome) error {
			if err := lite.Sleep(ctx, time.Hour); err != nil { // mail a day's first users in the next hour's batch
				return err
			}
			verdict, err := lite.AwaitSignal(ctx, "approved", 0)
			if err != nil {
				return err
			}
			fmt.Printf("user %d: %s\n", args.UserID, verdict)
			return nil
		})
		id, err := lite.EnqueueArgs(t.Context(), q, Welcome{UserID: 1})
		if err != nil {
			t.Fatal(err)
		}

		drain := func() {
			rep := litetest.Drain(t, w)
			fmt.Printf("ran %d: %d done, %d parked\n", rep.Leased, rep.Done, rep.Parked)
		}
		drain() // to its sleep
		clock.Advance(time.Hour)
		drain() // past it, to its wait for a signal
		if err := q.Signal(t.Context(), id, "approved", []byte("approved by ada")); err != nil {
			t.Fatal(err)
		}
		drain()
	})
	// Output:
	// ran 1: 0 done, 1 parked
	// ran 1: 0 done, 1 parked
	// user 1: approved by ada
	// ran 1: 1 done, 0 parked
}

// A failed assertion says what it wanted and lists what it found.
func ExampleRequireEnqueued_failure() {
	runTest(func(t testing.TB) {
		q := litetest.Open(t)
		if _, err := lite.EnqueueArgs(t.Context(), q, Welcome{UserID: 1, Email: "bob@example.com"}); err != nil {
			t.Fatal(err)
		}
		litetest.RequireEnqueued(t, q, Welcome{UserID: 1, Email: "ada@example.com"})
		t.Fatal(errors.New("not reached: a failed Require stops the test"))
	})
	// Output:
	// FAIL: litetest.RequireEnqueued: jobs of kind "welcome" in any queue: job 1, for want[0], has other args
	// want, in id order:
	// 	want[0]: args "{\"user_id\":1,\"email\":\"ada@example.com\"}"
	// found, every job of kind "welcome":
	// 	job 1 in queue "default" (available): args "{\"user_id\":1,\"email\":\"bob@example.com\"}"
}

// runTest stands in for go test, since an Example gets no *testing.T:
// read the function it runs as the body of a test. It prints what would
// fail the test.
func runTest(test func(t testing.TB)) {
	if failed, msg := runTB(test).failed(); failed {
		fmt.Println("FAIL:", msg)
	}
}

// A failed attempt does not fail the test: Work returns the event, with
// the handler's error and when the job runs again, for the test to
// assert on. A fixed Backoff makes that time exact.
func ExampleWork_failure() {
	runTest(func(t testing.TB) {
		clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
		q := litetest.Open(t, lite.Options{Now: clock.Now, Backoff: func(int) time.Duration { return time.Minute }})
		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		lite.HandleArgs(w, func(context.Context, *lite.Job, Welcome) error {
			return errors.New("mail server down")
		})
		id, err := lite.EnqueueArgs(t.Context(), q, Welcome{UserID: 1})
		if err != nil {
			t.Fatal(err)
		}

		ev := litetest.Work(t, w, id)
		fmt.Printf("%s: %v; job %s again at %s\n", ev.Kind, ev.Err, ev.State, ev.NextRunAt.Format("15:04"))
	})
	// Output:
	// failed: mail server down; job available again at 09:01
}
