package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/liteq/lite/lite"
)

// StatsCmd counts jobs per queue and state.
type StatsCmd struct{}

// Run prints a table, or JSON with --json.
func (c *StatsCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
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
	fmt.Fprintln(tw, "\toldest ready")
	for _, s := range stats {
		fmt.Fprint(tw, safe(s.Queue))
		for _, st := range lite.States {
			fmt.Fprintf(tw, "\t%d", s.Counts[st])
		}
		fmt.Fprintf(tw, "\t%s\n", s.OldestReady)
	}
	return tw.Flush()
}
