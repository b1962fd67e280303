package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// retryCmd starts a dead or cancelled job over.
type retryCmd struct {
	ID int64 `arg:"" help:"The dead or cancelled job's id."`
}

// Help is the longer text `lite retry --help` prints.
func (c *retryCmd) Help() string {
	return `The job starts over, available now, with all of its max_attempts again:
a job dead after 2 of 2 attempts runs up to two more times. Its errors
are kept as its history; attempt numbers start again at 1, and each
error's generation tells the runs apart. A job whose unique key another
unfinished job holds now is refused and left as it is.`
}

// Run retries the job.
func (c *retryCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := q.Retry(ctx, c.ID); err != nil {
		return jobError("retry", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateAvailable})
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d is available again\n", c.ID)
	return err
}
