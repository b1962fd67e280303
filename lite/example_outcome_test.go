package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/liteq/lite/lite"
)

// exampleQueue opens a queue in a fresh directory with an orders table
// beside lite's, and returns it with a cleanup.
func exampleQueue() (*lite.Queue, func()) {
	dir, err := os.MkdirTemp("", "lite-example")
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	q, err := lite.Open(ctx, filepath.Join(dir, "app.db"), lite.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := q.DB().ExecContext(ctx, `create table orders (id integer primary key, status text)`); err != nil {
		log.Fatal(err)
	}
	return q, func() {
		q.Close()
		os.RemoveAll(dir)
	}
}

// Code that leases by hand records a result and its own rows in one
// fenced commit: if the lease was lost, neither lands.
func ExampleQueue_Complete() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	id, _ := q.Enqueue(ctx, lite.NewJob{Kind: "ship", Payload: []byte("order 1")})
	jobs, _ := q.Lease(ctx, lite.LeaseRequest{})

	err := q.Complete(ctx, jobs[0].Lease(), []byte("tracking 1Z999"), func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `insert into orders values (1, 'shipped')`)
		return err
	})
	if errors.Is(err, lite.ErrLeaseLost) {
		fmt.Println("someone else has the job now; nothing was written")
	}
	j, _ := q.Get(ctx, id)
	var status string
	_ = q.DB().QueryRowContext(ctx, `select status from orders where id = 1`).Scan(&status)
	fmt.Printf("job %s with %q; order %s\n", j.State, j.Result, status)
	// Output: job done with "tracking 1Z999"; order shipped
}

// A handler's "failed" status commits in the transaction that records the
// failure, so the application never shows a job as pending that lite
// buried, nor as failed one that a newer lease still runs.
func ExampleCommitWithFailure() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	_, _ = q.Enqueue(ctx, lite.NewJob{Kind: "ship", Payload: []byte("order 2"), MaxAttempts: 1})

	w, _ := lite.NewWorker(q, lite.WorkerOptions{
		Logger: slog.New(slog.DiscardHandler),
		OnEvent: func(ev lite.Event) {
			if ev.Kind == lite.EventFailed {
				fmt.Printf("event: %s, job %s (%s)\n", ev.Kind, ev.State, ev.Why)
			}
		},
	})
	w.Handle("ship", func(ctx context.Context, job *lite.Job) error {
		lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
			status := "will retry"
			if f.State == lite.StateDead {
				status = "failed: " + f.Err.Error()
			}
			_, err := tx.ExecContext(ctx, `insert into orders values (2, ?)`, status)
			return err
		})
		return errors.New("carrier refused the parcel")
	})
	if _, err := w.RunOnce(ctx); err != nil {
		log.Fatal(err)
	}
	var status string
	_ = q.DB().QueryRowContext(ctx, `select status from orders where id = 2`).Scan(&status)
	fmt.Println("order", status)
	// Output:
	// event: failed, job dead (attempts spent)
	// order failed: carrier refused the parcel
}
