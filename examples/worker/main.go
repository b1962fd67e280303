// Command worker is the smallest useful lite worker: a typed handler, a
// few jobs, and a worker that runs until they are done.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/liteq/lite/lite"
)

// greeting is the typed input of a "greet" job: the type names the kind
// once, for enqueue and handler alike.
type greeting struct {
	Name string `json:"name"`
}

func (greeting) Kind() string { return "greet" }

func main() {
	if err := run(context.Background(), "worker.db", os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, path string, out io.Writer) error {
	q, err := lite.Open(ctx, path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()

	names := []string{"ada", "grace", "edsger"}
	for _, name := range names {
		if _, err := lite.EnqueueArgs(ctx, q, greeting{Name: name}); err != nil {
			return err
		}
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var mu sync.Mutex
	done := 0
	w, err := lite.NewWorker(q, lite.WorkerOptions{
		Concurrency: 2,
		// Events come from the handlers' goroutines, several at once: this
		// one prints under a lock and stops the worker when every job is
		// done.
		OnEvent: func(ev lite.Event) {
			if ev.Kind != lite.EventDone {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(out, "job %d done at generation %d\n", ev.JobID, ev.Generation)
			if done++; done == len(names) {
				stop()
			}
		},
	})
	if err != nil {
		return err
	}
	lite.HandleArgs(w, func(ctx context.Context, job *lite.Job, g greeting) error {
		lite.SetResult(ctx, []byte("hello, "+strings.ToUpper(g.Name)))
		return nil
	})
	return w.Run(ctx)
}
