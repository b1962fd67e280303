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
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tQUEUES\tKINDS\tSTARTED\tLAST SEEN")
	for _, w := range workers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s ago\n", safe(w.Identity), listOrEvery(w.Queues), listOrEvery(w.Kinds),
			w.StartedAt.Format(time.RFC3339), time.Since(w.SeenAt).Round(time.Second))
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
