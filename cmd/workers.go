package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/liteq/lite/lite"
)

// workersCmd lists the running workers of every process on the file, and
// the ready jobs none of them takes.
type workersCmd struct{}

type workersJSON struct {
	Workers   []lite.WorkerInfo `json:"workers"`
	Unhandled []lite.Unhandled  `json:"unhandled"`
}

// Run prints two tables, or JSON with --json.
func (c *workersCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	workers, err := q.Workers(ctx)
	if err != nil {
		return err
	}
	unhandled, err := q.Unhandled(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, workersJSON{Workers: nonNil(workers), Unhandled: nonNil(unhandled)})
	}
	running, err := runningBy(ctx, q)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tQUEUES\tKINDS\tSLOTS BUSY\tSTARTED\tLAST SEEN")
	for _, w := range workers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s ago\n", safe(w.Identity), listOrEvery(w.Queues), listOrEvery(w.Kinds),
			slotsBusy(running[w.Identity], w.Slots), w.StartedAt.Format(time.RFC3339), time.Since(w.SeenAt).Round(time.Second))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(unhandled) == 0 {
		return nil
	}
	fmt.Fprintln(env.Stdout, "\nReady jobs that no running worker takes (no worker serves the queue with a handler for the kind):")
	tw = tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tKIND\tJOBS\tOLDEST READY")
	for _, u := range unhandled {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", safe(u.Queue), safe(u.Kind), u.Count, u.OldestReady)
	}
	return tw.Flush()
}

// runningPage is how many running jobs runningBy reads at a time.
const runningPage = 1000

// runningBy counts the running jobs by who holds them: a lease's
// locked_by is its worker's identity.
func runningBy(ctx context.Context, q *lite.Queue) (map[string]int, error) {
	counts := map[string]int{}
	var after int64
	for {
		page, err := q.List(ctx, lite.ListFilter{State: lite.StateRunning, OmitBodies: true, AfterID: after, Limit: runningPage})
		if err != nil {
			return nil, err
		}
		for _, j := range page {
			counts[j.LockedBy]++
		}
		if len(page) < runningPage {
			return counts, nil
		}
		after = page[len(page)-1].ID
	}
}

// slotsBusy shows a worker's running jobs of its slots, as the
// dashboard does: "1 of 4", or "1 of -" from a worker that did not say.
func slotsBusy(running, slots int) string {
	if slots == 0 {
		return fmt.Sprintf("%d of -", running)
	}
	return fmt.Sprintf("%d of %d", running, slots)
}

// listOrEvery shows a worker's queues or kinds, each escaped; none means
// every one.
func listOrEvery(list []string) string {
	if len(list) == 0 {
		return "(every)"
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = safe(s)
	}
	return strings.Join(out, ",")
}

// nonNil makes an empty list print as [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}
