package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// retryCmd starts a dead or cancelled job over.
type retryCmd struct {
	ID int64 `arg:"" optional:"" help:"The dead or cancelled job's id; or filter flags for every job they match."`
	bulkFilter
}

// Help is the longer text `lite retry --help` prints.
func (c *retryCmd) Help() string {
	return `The job starts over, available now, with all of its max_attempts again:
a job dead after 2 of 2 attempts runs up to two more times. Its errors
are kept as its history; attempt numbers start again at 1, and each
error's generation tells the runs apart. A job with a unique key takes
its hold back; if another job holds the key now (however it holds it),
the retry is refused and the job left as it is.

With filter flags in place of an id, every dead or cancelled job that
matches them starts over, in batches of 1000, each its own short
transaction; a job whose unique key is held is skipped. --dry-run prints
how many would.`
}

// Run retries the job.
func (c *retryCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	switch one, err := c.one(lite.BulkRetry, c.ID); {
	case err != nil:
		return err
	case !one:
		return c.run(ctx, env, g, q, lite.BulkRetry)
	}
	if err := q.Retry(ctx, c.ID); err != nil {
		return jobError("retry", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateAvailable})
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d is available again\n", c.ID)
	return err
}
