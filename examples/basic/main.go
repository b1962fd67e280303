// Command basic enqueues a few jobs and processes them with the library's
// lease and ack calls, on a file named by its first argument.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/liteq/lite/lite"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "basic:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	path := "basic.db"
	if len(args) > 0 {
		path = args[0]
	}
	q, err := lite.Open(ctx, path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()

	for _, name := range []string{"ada", "grace", "edsger"} {
		if _, err := q.Enqueue(ctx, lite.NewJob{Queue: "greet", Payload: []byte(name)}); err != nil {
			return err
		}
	}
	for {
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"greet"}, Max: 10})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		for _, j := range jobs {
			greeting := "hello, " + strings.ToUpper(string(j.Payload))
			// The ack is fenced: had the lease been lost, it would change
			// nothing and return lite.ErrLeaseLost.
			if err := q.AckDone(ctx, j.Lease(), []byte(greeting)); err != nil {
				return err
			}
			fmt.Printf("job %d (generation %d): %s\n", j.ID, j.Generation, greeting)
		}
	}
}
