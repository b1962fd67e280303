package cmd

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// lsCmd lists jobs.
type lsCmd struct {
	State       []lite.State `short:"s" enum:"blocked,available,running,done,dead,cancelled,sleeping,awaiting" help:"Only jobs in this state; repeat (-s dead -s done) or list (-s dead,done) for several. sleeping and awaiting are the available jobs parked by a sleep or an await of a signal."`
	Queue       string       `short:"q" predictor:"queue" help:"Only jobs in this queue."`
	Kind        string       `short:"k" help:"Only jobs of this kind."`
	Tag         []string     `help:"Only jobs carrying this tag (repeat, or a,b: every one)."`
	Batch       int64        `placeholder:"ID" help:"Only the jobs of this batch (see lite batch)."`
	Before      int64        `placeholder:"ID" help:"Only jobs with a smaller id: pass the last id of the previous page to page newest first."`
	After       int64        `placeholder:"ID" help:"With --oldest-first, only jobs with a larger id: pass the last id of the previous page."`
	OldestFirst bool         `help:"List the oldest jobs first, in id order; --after pages it."`
	Limit       int          `short:"n" default:"50" help:"At most this many jobs."`
}

// Validate refuses an empty filter value, which would list every job, a
// queue, kind or tag no job can have, and --before 0: the library reads
// a zero as no page at all, and would list the newest jobs rather than
// none.
func (c *lsCmd) Validate(kctx *kong.Context) error {
	if c.Before == 0 && flagGiven(kctx, "before") {
		return usagef("--before 0 is no job id: ids start at 1; leave --before out for the newest page")
	}
	if c.Batch == 0 && flagGiven(kctx, "batch") {
		return usagef("--batch 0 is no batch id: ids start at 1; leave --batch out for every job")
	}
	return jobFilter{states: c.State, queue: c.Queue, kind: c.Kind, tags: c.Tag}.check(kctx)
}

// list reads the jobs newest first, or in id order: one page of each
// state asked for, merged and cut to the limit, or one of every state.
func (c *lsCmd) list(ctx context.Context, q *lite.Queue) ([]*lite.Job, error) {
	states := slices.Compact(slices.Sorted(slices.Values(c.State)))
	if len(states) == 0 {
		states = []lite.State{""}
	}
	var jobs []*lite.Job
	for _, s := range states {
		f := lite.ListFilter{State: s, Queue: c.Queue, Kind: c.Kind, Tags: c.Tag, Batch: c.Batch,
			Newest: !c.OldestFirst, BeforeID: c.Before, AfterID: c.After, Limit: c.Limit}
		if parked, ok := lsParked[s]; ok {
			f.State, f.Parked = "", parked
		}
		page, err := q.List(ctx, f)
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, page...)
	}
	order := func(a, b *lite.Job) int { return cmp.Compare(b.ID, a.ID) }
	if c.OldestFirst {
		order = func(a, b *lite.Job) int { return cmp.Compare(a.ID, b.ID) }
	}
	slices.SortFunc(jobs, order)
	return jobs[:min(len(jobs), c.Limit)], nil
}

// Run prints the jobs as a table, or as JSON with --json.
func (c *lsCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	switch {
	case c.Limit < 1:
		return usagef("ls: --limit must be at least 1")
	case c.After != 0 && !c.OldestFirst:
		return usagef("ls: --after pages oldest first: add --oldest-first, or page newest first with --before")
	case c.Before != 0 && c.OldestFirst:
		return usagef("ls: --before pages newest first: leave out --oldest-first, or page oldest first with --after")
	case c.Before < 0 || c.After < 0:
		return usagef("ls: --before and --after take a job id, not a negative number")
	case c.Batch < 0:
		return usagef("ls: --batch takes a batch id, not a negative number")
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
	now := time.Now()
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tQUEUE\tKIND\tPRIORITY\tATTEMPTS\tGENERATION\tLOCKED BY\tTAGS\tPROGRESS\tCREATED\tRUN AT\tFINISHED")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d/%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			j.ID, lsState(j, now), safe(j.Queue), safe(j.Kind), j.Priority, j.Attempts, j.MaxAttempts, j.Generation,
			safe(j.LockedBy), safe(strings.Join(j.Tags, ",")), progressText(j), lsTime(j.CreatedAt), lsTime(j.RunAt), lsTime(j.FinishedAt))
	}
	return tw.Flush()
}

// lsParked is what the states ls shows for parked jobs filter on.
var lsParked = map[lite.State]string{"sleeping": lite.ParkedSleep, "awaiting": lite.ParkedSignal}

// lsState is the job's state as the table shows it: a parked job's as
// what it waits for (sleeping, awaiting), not as available, since no
// worker takes it before its time or its signal; one whose time has come
// (its sleep, or its wait's timeout, is over) is available.
func lsState(j *lite.Job, now time.Time) string {
	switch {
	case j.State != lite.StateAvailable || !j.RunAt.After(now):
	case j.Parked == lite.ParkedSleep:
		return "sleeping"
	case j.Parked == lite.ParkedSignal:
		return "awaiting"
	}
	return safe(string(j.State))
}

// lsTime is a time as the table shows it: RFC 3339 in UTC, to the second,
// as lite workers shows its times; - for none.
func lsTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
