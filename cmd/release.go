package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// releaseCmd is ReleaseUnowned from the shell.
type releaseCmd struct {
	ID int64 `arg:"" help:"The running job's id."`
}

// Run makes the job available again; its worker's ack becomes a no-op.
func (c *releaseCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	gen, err := q.ReleaseUnowned(ctx, c.ID)
	if err != nil {
		return jobError("release", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, jobChange{ID: c.ID, State: lite.StateAvailable, Generation: gen})
	}
	_, err = fmt.Fprintf(env.Stdout, "job %d released; now generation %d\n", c.ID, gen)
	return err
}
