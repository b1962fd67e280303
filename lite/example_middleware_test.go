package lite_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"

	"github.com/liteq/lite/lite"
)

// A middleware wraps every handler: it sees the job, with its tags and
// metadata, and the outcome of the handler it wraps.
func ExampleMiddleware() {
	q, cleanup := exampleQueue()
	defer cleanup()
	ctx := context.Background()
	_, err := q.Enqueue(ctx, lite.NewJob{Kind: "charge", Tags: []string{"eu", "vip"},
		Meta: map[string]string{"request_id": "r-42"}, MaxAttempts: 1})
	if err != nil {
		log.Fatal(err)
	}

	logged := func(next lite.Handler) lite.Handler {
		return func(ctx context.Context, job *lite.Job) error {
			err := next(ctx, job)
			fmt.Printf("%s %v request %s: %v\n", job.Kind, job.Tags, job.Meta["request_id"], err)
			return err
		}
	}
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler),
		Middleware: []lite.Middleware{logged}})
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("charge", func(context.Context, *lite.Job) error { return errors.New("card declined") })
	if _, err := w.RunOnce(ctx); err != nil {
		log.Fatal(err)
	}
	dead, err := q.List(ctx, lite.ListFilter{State: lite.StateDead, Tags: []string{"vip"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead vip jobs:", len(dead))
	// Output:
	// charge [eu vip] request r-42: card declined
	// dead vip jobs: 1
}
