package cmd

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/liteq/lite/lite"
)

// lsCmd lists jobs.
type lsCmd struct {
	State lite.State `short:"s" enum:",available,running,done,dead,cancelled" default:"" help:"Only jobs in this state."`
	Queue string     `short:"q" help:"Only jobs in this queue."`
	Kind  string     `short:"k" help:"Only jobs of this kind."`
	After int64      `help:"Only jobs with a larger id (for paging)."`
	Limit int        `short:"n" default:"50" help:"At most this many jobs."`
}

// Run prints the jobs as a table, or as JSON with --json.
func (c *lsCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.Limit < 1 {
		return usagef("ls: --limit must be at least 1")
	}
	jobs, err := q.List(ctx, lite.ListFilter{State: c.State, Queue: c.Queue, Kind: c.Kind, AfterID: c.After, Limit: c.Limit})
	if err != nil {
		return err
	}
	if g.JSON {
		if jobs == nil {
			jobs = []*lite.Job{} // none: a list, not null
		}
		return writeJSON(env.Stdout, jobs)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tPRIORITY\tATTEMPTS\tGENERATION\tLOCKED BY\tPROGRESS")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d/%d\t%d\t%s\t%s\n",
			j.ID, safe(string(j.State)), safe(j.Queue), safe(j.Kind), j.Priority, j.Attempts, j.MaxAttempts, j.Generation, safe(j.LockedBy),
			progressText(j))
	}
	return tw.Flush()
}
