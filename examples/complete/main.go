// Command complete shows fenced transactional completion: each handler
// books a payment in its own table in the queue's file, in the same
// transaction as its ack. A worker that lost its lease books nothing, so
// every payment is booked exactly once, however often a job runs.
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
    job integer primary key, cents integer not null)`); err != nil {
		return err
	}

	// The jobs and the order rows they stand for commit together.
	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for cents := 100; cents <= 500; cents += 100 {
		if _, err := q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "book", Payload: []byte(strconv.Itoa(cents))}); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var left atomic.Int32
	left.Store(5)
	w, err := lite.NewWorker(q, lite.WorkerOptions{OnEvent: func(ev lite.Event) {
		if ev.Kind == lite.EventDone {
			if left.Add(-1) == 0 {
				stop()
			}
		}
	}})
	if err != nil {
		return err
	}
	w.Handle("book", func(ctx context.Context, job *lite.Job) error {
		cents, err := strconv.Atoi(string(job.Payload))
		if err != nil {
			return lite.Permanent(err)
		}
		lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `insert into payments (job, cents) values (?, ?)`, job.ID, cents)
			return err
		})
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
	return nil
}
