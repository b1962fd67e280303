package cmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/liteq/lite/lite"
)

// lsCmd lists jobs.
type lsCmd struct {
	State []lite.State `short:"s" enum:"blocked,available,running,done,dead,cancelled" help:"Only jobs in this state; repeat (-s dead -s done) or list (-s dead,done) for several."`
	Queue string       `short:"q" help:"Only jobs in this queue."`
	Kind  string       `short:"k" help:"Only jobs of this kind."`
	Tag   []string     `help:"Only jobs carrying this tag (repeat, or a,b: every one)."`
	After int64        `help:"Only jobs with a larger id (for paging)."`
	Limit int          `short:"n" default:"50" help:"At most this many jobs."`
}

// list reads the jobs in id order: one page of each state asked for,
// merged and cut to the limit, or one of every state.
func (c *lsCmd) list(ctx context.Context, q *lite.Queue) ([]*lite.Job, error) {
	states := slices.Compact(slices.Sorted(slices.Values(c.State)))
	if len(states) == 0 {
		states = []lite.State{""}
	}
	var jobs []*lite.Job
	for _, s := range states {
		page, err := q.List(ctx, lite.ListFilter{State: s, Queue: c.Queue, Kind: c.Kind, Tags: c.Tag, AfterID: c.After, Limit: c.Limit})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, page...)
	}
	slices.SortFunc(jobs, func(a, b *lite.Job) int { return cmp.Compare(a.ID, b.ID) })
	return jobs[:min(len(jobs), c.Limit)], nil
}

// Run prints the jobs as a table, or as JSON with --json.
func (c *lsCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.Limit < 1 {
		return usagef("ls: --limit must be at least 1")
	}
	jobs, err := c.list(ctx, q)
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
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tPRIORITY\tATTEMPTS\tGENERATION\tLOCKED BY\tTAGS\tPROGRESS")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d/%d\t%d\t%s\t%s\t%s\n",
			j.ID, safe(string(j.State)), safe(j.Queue), safe(j.Kind), j.Priority, j.Attempts, j.MaxAttempts, j.Generation,
			safe(j.LockedBy), safe(strings.Join(j.Tags, ",")), progressText(j))
	}
	return tw.Flush()
}
