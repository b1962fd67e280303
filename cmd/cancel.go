package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// cancelCmd cancels a job.
type cancelCmd struct {
	ID int64 `arg:"" help:"The available or running job's id."`
}

// Run cancels the job: an available one never runs; a running one's lease
// is voided, so its worker stops it and its ack is skipped.
func (c *cancelCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := q.Cancel(ctx, c.ID); err != nil {
		return jobError("cancel", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateCancelled})
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d cancelled\n", c.ID)
	return err
}
