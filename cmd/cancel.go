package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// cancelCmd cancels a job.
type cancelCmd struct {
	ID int64 `arg:"" optional:"" help:"The blocked, available or running job's id; or filter flags for every job they match."`
	bulkFilter
}

// Run cancels the job: an available one never runs; a running one's lease
// is voided, so its worker stops it and its ack is skipped.
// With filter flags in place of an id, it cancels every available or
// running job they match, in batches.
func (c *cancelCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	switch one, err := c.one(lite.BulkCancel, c.ID); {
	case err != nil:
		return err
	case !one:
		return c.run(ctx, env, g, q, lite.BulkCancel)
	}
	if err := q.Cancel(ctx, c.ID); err != nil {
		return jobError("cancel", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateCancelled})
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d cancelled\n", c.ID)
	return err
}
