package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/liteq/lite/lite"
)

// statsCmd counts jobs per queue and state, and says when ready jobs wait
// that no running worker takes.
type statsCmd struct{}

// Run prints a table, or JSON with --json.
func (c *statsCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	stats, err := q.Stats(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		if stats == nil {
			stats = []lite.QueueStats{} // no jobs: a list, not null
		}
		return writeJSON(env.Stdout, stats)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "QUEUE")
	for _, st := range lite.States {
		fmt.Fprintf(tw, "\t%s", st)
	}
	fmt.Fprintln(tw, "\tsleeping\tawaiting\toldest ready\tflow")
	for _, s := range stats {
		fmt.Fprint(tw, safe(s.Queue))
		for _, st := range lite.States {
			fmt.Fprintf(tw, "\t%d", s.Counts[st])
		}
		fmt.Fprintf(tw, "\t%d\t%d\t%s\t%s\n", s.Sleeping, s.Awaiting, s.OldestReady, describeFlow(s))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return noteUnhandled(ctx, env, q)
}

// describeFlow words a queue's pause and limits for the stats table.
func describeFlow(s lite.QueueStats) string {
	limits := describeLimits(s.Limits)
	switch {
	case s.Paused && s.Limits == lite.Limits{}:
		return "paused"
	case s.Paused:
		return "paused, " + limits
	case s.Limits == lite.Limits{}:
		return "-"
	}
	return limits
}

// noteUnhandled adds a line when ready jobs wait that no running worker
// takes, so that a kind nobody handles is seen where counts are read.
func noteUnhandled(ctx context.Context, env Env, q *lite.Queue) error {
	unhandled, err := q.Unhandled(ctx)
	if err != nil || len(unhandled) == 0 {
		return err
	}
	var jobs int64
	for _, u := range unhandled {
		jobs += u.Count
	}
	_, err = fmt.Fprintf(env.Stdout, "\nready jobs that no running worker takes: %d (see lite workers)\n", jobs)
	return err
}
