package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/liteq/lite/lite"
)

// DemoCmd walks through the fencing story of a frozen worker on a local
// file, with real time.
type DemoCmd struct {
	File       string        `default:"lite-demo.db" type:"path" help:"The demo's own file; it is made anew."`
	Jobs       int           `default:"12" help:"How many jobs to enqueue."`
	StaleAfter time.Duration `default:"1s" help:"How long a heartbeat may lapse before the job is reclaimed."`
}

// Run enqueues jobs, lets worker A lease one and freeze, reclaims it, lets
// worker B finish it, and shows A's late ack rejected.
func (c *DemoCmd) Run(ctx context.Context, env Env) error {
	if c.Jobs < 1 {
		return UsageError{errors.New("demo: --jobs must be at least 1")}
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(c.File + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("demo: %w", err)
		}
	}
	q, err := lite.Open(ctx, c.File, lite.Options{})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer q.Close()
	out := env.Stdout
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }

	jobs := make([]lite.NewJob, c.Jobs)
	for i := range jobs {
		jobs[i] = lite.NewJob{Queue: "emails", Kind: "send", Payload: fmt.Appendf(nil, "to user%d@example.com", i+1)}
	}
	if _, err := q.EnqueueBatch(ctx, jobs); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	say("enqueued %d jobs into %s", c.Jobs, c.File)

	leaseAs := func(worker string) (*lite.Job, error) {
		got, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"emails"}, LockedBy: worker})
		if err != nil || len(got) == 0 {
			return nil, errors.Join(err, errors.New("demo: no job to lease"))
		}
		return got[0], nil
	}
	a, err := leaseAs("worker-A")
	if err != nil {
		return err
	}
	say("worker A leased job %d at generation %d, then froze: no more heartbeats", a.ID, a.Generation)

	select {
	case <-time.After(c.StaleAfter + c.StaleAfter/2):
	case <-ctx.Done():
		return ctx.Err()
	}
	reclaimed, err := q.ReclaimOrphaned(ctx, c.StaleAfter)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	for _, r := range reclaimed {
		say("recoverStale: job %d's heartbeat lapsed for over %s; it is %s again at generation %d",
			r.JobID, c.StaleAfter, r.State, r.Generation)
	}
	b, err := leaseAs("worker-B")
	if err != nil {
		return err
	}
	say("worker B leased job %d at generation %d", b.ID, b.Generation)
	if err := q.AckDone(ctx, b.Lease(), []byte("sent by B")); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	say("worker B acked job %d: done", b.ID)

	err = q.AckDone(ctx, a.Lease(), []byte("sent by A"))
	if !errors.Is(err, lite.ErrLeaseLost) {
		return fmt.Errorf("demo: worker A's stale ack was not rejected: %v", err)
	}
	say("worker A woke up and acked job %d at generation %d: rejected (%v); B's result stands", a.ID, a.Generation, err)

	if err := drain(ctx, q, 3); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	say("three workers drained the rest\n")
	return printJobs(ctx, q, out)
}

// drain runs n workers that ack every job until the queue is empty.
func drain(ctx context.Context, q *lite.Queue, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			worker := fmt.Sprintf("worker-%c", 'C'+i)
			for {
				jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"emails"}, Max: 2, LockedBy: worker})
				if err != nil || len(jobs) == 0 {
					errs[i] = err
					return
				}
				for _, j := range jobs {
					if err := q.AckDone(ctx, j.Lease(), []byte("sent by "+worker[len("worker-"):])); err != nil {
						errs[i] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func printJobs(ctx context.Context, q *lite.Queue, out interface{ Write([]byte) (int, error) }) error {
	jobs, err := q.List(ctx, lite.ListFilter{Limit: 1000})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tGENERATION\tATTEMPTS\tLOCKED BY\tRESULT")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", j.ID, j.State, j.Generation, j.Attempts, j.LockedBy, j.Result)
	}
	return tw.Flush()
}
