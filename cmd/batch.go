package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/liteq/lite/lite"
)

// batchCmd prints a batch's progress.
type batchCmd struct {
	ID int64 `arg:"" help:"The batch's id."`
}

// Run prints the batch's counts, one line, or its JSON with --json.
func (c *batchCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	b, err := q.GetBatch(ctx, c.ID)
	if errors.Is(err, lite.ErrNotFound) {
		return exitError{fmt.Errorf("batch %d: no such batch", c.ID), 2}
	}
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, b)
	}
	state := "pending"
	if !b.FinishedAt.IsZero() {
		state = "finished"
	}
	_, err = fmt.Fprintf(env.Stdout, "batch %d: %s, %d jobs: %d done, %d dead, %d cancelled, %d pending\n",
		b.ID, state, b.Total, b.Done, b.Dead, b.Cancelled, b.Pending())
	return err
}
