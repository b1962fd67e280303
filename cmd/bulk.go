package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// bulkFilter are the flags of retry, cancel and delete that act on every
// job they match rather than on one id.
type bulkFilter struct {
	State     []lite.State  `short:"s" help:"Only jobs in this state; repeat for more."`
	Queue     string        `short:"q" predictor:"queue" help:"Only jobs of this queue."`
	Kind      string        `short:"k" help:"Only jobs of this kind."`
	Tag       []string      `help:"Only jobs carrying this tag (repeat, or a,b: every one)."`
	OlderThan time.Duration `help:"Only jobs that finished, or if unfinished were enqueued, longer ago than this."`
	All       bool          `help:"Every job the command applies to, with no other filter."`
	DryRun    bool          `help:"Print how many jobs would change, and change none."`
}

// bulkDone is what a bulk command prints with --json.
type bulkDone struct {
	Action lite.BulkAction `json:"action"`
	Count  int64           `json:"count"`
	DryRun bool            `json:"dry_run"`
}

// Validate refuses an empty filter value, which would match every job, and
// a queue or kind no job can have.
func (f *bulkFilter) Validate(kctx *kong.Context) error {
	return jobFilter{states: f.State, queue: f.Queue, kind: f.Kind, tags: f.Tag}.check(kctx)
}

// set says whether any flag asks for a bulk action.
func (f bulkFilter) set() bool {
	return len(f.State) > 0 || f.Queue != "" || f.Kind != "" || len(f.Tag) > 0 || f.OlderThan != 0 || f.All || f.DryRun
}

// one refuses the flags beside a job id, and says whether id names one.
func (f bulkFilter) one(action lite.BulkAction, id int64) (bool, error) {
	switch {
	case id != 0 && f.set():
		return false, usagef("%s: give a job id or filter flags, not both", action)
	case id == 0 && !f.set():
		return false, usagef("%s: give a job id, or filter flags (--state, --queue, --kind, --tag, --older-than, or --all)", action)
	}
	return id != 0, nil
}

// run applies action to every job f matches, or with --dry-run counts
// them, and prints the count.
func (f bulkFilter) run(ctx context.Context, env Env, g *globals, q *lite.Queue, action lite.BulkAction) error {
	if f.OlderThan < 0 {
		return usagef("%s: --older-than %s is negative", action, f.OlderThan)
	}
	filter := lite.Filter{States: f.State, Queue: f.Queue, Kind: f.Kind, Tags: f.Tag}
	if f.OlderThan > 0 {
		filter.Before = time.Now().Add(-f.OlderThan)
	}
	count := q.Bulk
	if f.DryRun {
		count = q.BulkCount
	}
	n, err := count(ctx, action, filter)
	if errors.Is(err, lite.ErrInvalidState) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, bulkDone{Action: action, Count: n, DryRun: f.DryRun})
	}
	verb := map[lite.BulkAction]string{lite.BulkRetry: "retried", lite.BulkCancel: "cancelled", lite.BulkDelete: "deleted"}[action]
	if f.DryRun {
		_, err = fmt.Fprintf(env.Stdout, "would %s %d jobs (dry run: nothing changed)\n", action, n)
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "%s %d jobs\n", verb, n)
	return err
}
