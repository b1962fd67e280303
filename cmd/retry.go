package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// RetryCmd makes a dead or cancelled job available again.
type RetryCmd struct {
	ID int64 `arg:"" help:"The dead or cancelled job's id."`
}

// Run retries the job.
func (c *RetryCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
	if err := q.Retry(ctx, c.ID); err != nil {
		return jobError("retry", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateAvailable})
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d is available again\n", c.ID)
	return err
}
