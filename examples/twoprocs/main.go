// Command twoprocs runs two worker processes on one file. The parent
// enqueues jobs and starts two copies of itself as workers; each job is
// done exactly once, by whichever process leased it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/liteq/lite/lite"
)

// roleEnv tells a copy of this program to be a worker on the named file.
const roleEnv = "TWOPROCS_WORKER_DB"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if path := os.Getenv(roleEnv); path != "" {
		err = work(ctx, path)
	} else {
		err = run(ctx, "twoprocs.db", os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "twoprocs:", err)
		os.Exit(1)
	}
}

const jobs = 200

func run(ctx context.Context, path string, out io.Writer) error {
	q, err := lite.Open(ctx, path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	batch := make([]lite.NewJob, jobs)
	for i := range batch {
		batch[i] = lite.NewJob{Kind: "square", Payload: []byte(strconv.Itoa(i))}
	}
	if _, err := q.EnqueueBatch(ctx, batch); err != nil {
		return err
	}

	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var workers []*exec.Cmd
	for range 2 {
		c := exec.CommandContext(ctx, exe)
		c.Env = append(os.Environ(), roleEnv+"="+path)
		c.Stderr = os.Stderr
		if err := c.Start(); err != nil {
			return err
		}
		workers = append(workers, c)
	}
	var errs []error
	for _, c := range workers {
		errs = append(errs, c.Wait())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}

	done, err := q.List(ctx, lite.ListFilter{State: lite.StateDone, Limit: jobs})
	if err != nil {
		return err
	}
	byProcess := map[string]int{}
	for _, j := range done {
		byProcess[j.LockedBy]++
	}
	fmt.Fprintf(out, "%d of %d jobs done by %d processes\n", len(done), jobs, len(byProcess))
	return nil
}

// work runs jobs until none is left, then exits.
func work(ctx context.Context, path string) error {
	q, err := lite.Open(ctx, path, lite.Options{})
	if err != nil {
		return err
	}
	defer q.Close()
	w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 4})
	if err != nil {
		return err
	}
	w.Handle("square", func(ctx context.Context, job *lite.Job) error {
		n, err := strconv.Atoi(string(job.Payload))
		if err != nil {
			return lite.Permanent(err)
		}
		lite.SetResult(ctx, []byte(strconv.Itoa(n*n)))
		return nil
	})
	for {
		rep, err := w.RunOnce(ctx)
		if err != nil || rep.Leased == 0 {
			return err
		}
	}
}
