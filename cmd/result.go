package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/liteq/lite/lite"
)

// resultCmd prints a finished job's result.
type resultCmd struct {
	ID int64 `arg:"" help:"The job's id."`
}

// Help is the longer text `lite result --help` prints.
func (c *resultCmd) Help() string {
	return `Prints the result of a done job on standard output, as the job stored
it (with --json: the job, as lite show --json prints it), without
waiting: a job not finished yet is an error (exit 5); lite wait waits.

` + exitCodes
}

// Run prints the job's result, or says why it has none.
func (c *resultCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	j, err := q.Get(ctx, c.ID)
	switch {
	case errors.Is(err, lite.ErrNotFound):
		return exitError{jobError("result", c.ID, err), 2}
	case err != nil:
		return jobError("result", c.ID, err)
	case !j.State.Finished():
		return exitError{fmt.Errorf("result job %d: it is %s, not finished yet", c.ID, j.State), ExitUnfinished}
	}
	return printEnds(env, g.JSON, []*lite.Job{j})
}
