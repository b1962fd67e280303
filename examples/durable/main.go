// Command durable runs one order through a handler made of durable steps:
// it charges the card once across a failed attempt, sleeps without a
// slot, and waits for a signal from outside, on a file named by its first
// argument.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/liteq/lite/lite"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	path := "durable.db"
	if len(args) > 0 {
		path = args[0]
	}
	// The program's clock runs an hour ahead once the order has slept
	// (below), rather than the program waiting out the hour.
	var ahead atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	q, err := lite.Open(ctx, path, lite.Options{Now: now})
	if err != nil {
		return err
	}
	defer q.Close()
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	charges, attempts := 0, 0
	w.Handle("order", func(ctx context.Context, job *lite.Job) error {
		attempts++
		receipt, err := lite.RunStep(ctx, "charge", func(context.Context) (string, error) {
			charges++ // the card is charged once per job, whatever follows
			return fmt.Sprintf("receipt-%d", job.ID), nil
		})
		if err != nil {
			return err
		}
		if attempts == 1 {
			return errors.New("the mail server is down") // retried; the charge is not
		}
		if err := lite.Sleep(ctx, time.Hour); err != nil {
			return err // parked: no slot held, no attempt spent
		}
		carrier, err := lite.AwaitSignal(ctx, "shipped", 0)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "order %d: %s, shipped by %s, %d charge\n", job.ID, receipt, carrier, charges)
		return nil
	})

	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "order", Payload: []byte(`{"sku":"tea"}`)})
	if err != nil {
		return err
	}
	step := func(what string) error {
		ev, err := w.RunJob(ctx, id)
		if err != nil {
			return err
		}
		j, err := q.Get(ctx, id)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: %s, parked %q\n", what, ev.Kind, j.Parked)
		return nil
	}
	if err := step("first attempt"); err != nil {
		return err
	}
	if err := step("retry"); err != nil {
		return err
	}
	ahead.Store(int64(time.Hour + time.Second)) // past the sleep's wake time
	if err := step("after the sleep"); err != nil {
		return err
	}
	if err := q.Signal(ctx, id, "shipped", []byte("DHL")); err != nil {
		return err
	}
	return step("after the signal")
}
