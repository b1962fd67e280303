// Command complete shows fenced transactional completion: each handler
// books a payment in its own table in the queue's file, in the same
// transaction as its ack, and stores a receipt as the job's result. A
// payment that can never be booked is declined, and the declined row
// commits with the job's death. A worker that lost its lease writes
// nothing, so every payment is booked or declined exactly once, however
// often a job runs.
package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/liteq/lite/lite"
)

func main() {
	if err := run(context.Background(), "complete.db", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "complete:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, out io.Writer) error {
	q, err := lite.Open(ctx, path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	if _, err := q.DB().ExecContext(ctx, `create table if not exists payments (
    job integer primary key, cents integer not null);
create table if not exists declined (job integer primary key, reason text not null)`); err != nil {
		return err
	}

	// The jobs and the order rows they stand for commit together.
	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, amount := range []string{"100", "200", "300", "400", "500", "a lot"} {
		if _, err := q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "book", Payload: []byte(amount)}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var left atomic.Int32
	left.Store(6)
	w, err := lite.NewWorker(q, lite.WorkerOptions{OnEvent: func(ev lite.Event) {
		// Done or dead, the job is settled for good; a failure to retry
		// (State available) is not.
		if ev.State == lite.StateDone || ev.State == lite.StateDead {
			if left.Add(-1) == 0 {
				stop()
			}
		}
	}})
	if err != nil {
		return err
	}
	w.Handle("book", func(ctx context.Context, job *lite.Job) error {
		// Registered first, so that every way this attempt can fail
		// records the decline, in the failure's own transaction, once the
		// job is dead.
		lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
			if f.State != lite.StateDead {
				return nil // it will be tried again
			}
			_, err := tx.ExecContext(ctx, `insert into declined (job, reason) values (?, ?)`, job.ID, f.Err.Error())
			return err
		})
		cents, err := strconv.Atoi(string(job.Payload))
		if err != nil {
			return lite.Permanent(fmt.Errorf("amount %q: not a number of cents", job.Payload))
		}
		lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `insert into payments (job, cents) values (?, ?)`, job.ID, cents)
			return err
		})
		lite.SetResult(ctx, fmt.Appendf(nil, "receipt %d", job.ID)) // lands in the same commit
		return nil
	})
	if err := w.Run(ctx); err != nil {
		return err
	}
	var n, total int
	if err := q.DB().QueryRowContext(context.Background(),
		`select count(*), coalesce(sum(cents), 0) from payments`).Scan(&n, &total); err != nil {
		return err
	}
	fmt.Fprintf(out, "%d payments booked, %d cents in all\n", n, total)
	rows, err := q.DB().QueryContext(context.Background(), `select job, reason from declined order by job`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			job    int64
			reason string
		)
		if err := rows.Scan(&job, &reason); err != nil {
			return err
		}
		fmt.Fprintf(out, "job %d declined: %s\n", job, reason)
	}
	return rows.Err()
}
