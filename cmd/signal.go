package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// signalCmd is Signal from the shell.
type signalCmd struct {
	ID      int64  `arg:"" help:"The job's id."`
	Name    string `arg:"" help:"The signal's name."`
	Payload string `arg:"" optional:"" help:"The payload its await prints."`
}

// Run sends the signal.
func (c *signalCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	if err := q.Signal(ctx, c.ID, c.Name, []byte(c.Payload)); err != nil {
		return jobError("signal", c.ID, err)
	}
	_, err := fmt.Fprintf(env.Stdout, "job %d signalled %s\n", c.ID, safe(c.Name))
	return err
}
