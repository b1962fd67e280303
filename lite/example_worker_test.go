package lite_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"

	"github.com/liteq/lite/lite"
)

// quietWorker is a worker that logs nothing, so that an example's output
// is what it prints.
func quietWorker(q *lite.Queue) *lite.Worker {
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	return w
}

// A handler for a typed job gets its args decoded; the job's kind comes
// from the type, so enqueue and handler cannot disagree on a name.
func ExampleHandleArgs() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	if _, err := lite.EnqueueArgs(ctx, q, Welcome{UserID: 7, Email: "ada@example.com"}); err != nil {
		log.Fatal(err)
	}

	w := quietWorker(q)
	lite.HandleArgs(w, func(ctx context.Context, job *lite.Job, a Welcome) error {
		fmt.Printf("mailing %s (user %d), attempt %d, generation %d\n", a.Email, a.UserID, job.Attempts, job.Generation)
		return nil // done; an error would be retried after a backoff
	})
	rep, err := w.RunOnce(ctx) // Run does this until its context ends
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("leased %d, done %d\n", rep.Leased, rep.Done)
	// Output:
	// mailing ada@example.com (user 7), attempt 1, generation 1
	// leased 1, done 1
}

// A handler's own rows commit in the transaction that acks its job, and
// only while its lease is current: a worker that lost the job writes
// nothing.
func ExampleCommitWithAck() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	if _, err := q.DB().ExecContext(ctx, `insert into orders values (3, 'placed')`); err != nil {
		log.Fatal(err)
	}
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "ship", Payload: []byte("3")})
	if err != nil {
		log.Fatal(err)
	}

	w := quietWorker(q)
	w.Handle("ship", func(ctx context.Context, job *lite.Job) error {
		// ... hand the parcel to the carrier ...
		lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `update orders set status = 'shipped' where id = $1`, string(job.Payload))
			return err
		})
		lite.SetResult(ctx, []byte("tracking 1Z999"))
		return nil
	})
	if _, err := w.RunOnce(ctx); err != nil {
		log.Fatal(err)
	}

	j, err := q.Get(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	var status string
	if err := q.DB().QueryRowContext(ctx, `select status from orders where id = 3`).Scan(&status); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %s with %q; order %s\n", j.State, j.Result, status)
	// Output: job done with "tracking 1Z999"; order shipped
}

// The whole round: an order and its typed job commit together, and the
// handler marks the order shipped in the transaction that acks the job.
func Example() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()

	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `insert into orders values (4, 'placed')`); err != nil {
		log.Fatal(err)
	}
	if _, err := lite.EnqueueArgsTx(ctx, q, tx, Ship{Order: 4}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	w := quietWorker(q)
	lite.HandleArgs(w, func(ctx context.Context, job *lite.Job, a Ship) error {
		lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `update orders set status = 'shipped' where id = $1`, a.Order)
			return err
		})
		return nil
	})
	if _, err := w.RunOnce(ctx); err != nil { // w.Run(ctx) in a program
		log.Fatal(err)
	}

	var status string
	if err := q.DB().QueryRowContext(ctx, `select status from orders where id = 4`).Scan(&status); err != nil {
		log.Fatal(err)
	}
	fmt.Println("order 4:", status)
	// Output: order 4: shipped
}

// Ship is a typed job: ship one order.
type Ship struct {
	Order int64 `json:"order"`
}

func (Ship) Kind() string { return "ship" }
