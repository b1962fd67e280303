package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// purgeCmd deletes old finished jobs.
type purgeCmd struct {
	State     []lite.State  `short:"s" required:"" enum:"done,dead,cancelled" help:"State to purge: done, dead or cancelled; repeat for more."`
	OlderThan time.Duration `required:"" help:"Purge jobs that finished longer ago than this."`
}

// Run purges and prints how many jobs went (--json: {"purged": N}).
func (c *purgeCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.OlderThan < 0 {
		return usagef("purge: --older-than %s is negative", c.OlderThan)
	}
	if len(c.State) == 0 { // --state "$STATES" with STATES unset would purge nothing and say so, exit 0
		return usagef("purge: --state is empty: give done, dead or cancelled")
	}
	n, err := q.Purge(ctx, time.Now().Add(-c.OlderThan), c.State...)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Purged int64 `json:"purged"`
		}{n})
	}
	_, err = fmt.Fprintf(env.Stdout, "purged %d jobs\n", n)
	return err
}
