package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// ReclaimCmd is ReclaimOrphaned (recoverStale) from the shell.
type ReclaimCmd struct {
	StaleAfter time.Duration `default:"30s" help:"Reclaim jobs whose heartbeat is older than this."`
}

// Run reclaims and prints each job taken back (--json: a list of them).
func (c *ReclaimCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
	if c.StaleAfter <= 0 {
		return usagef("reclaim: --stale-after must be positive")
	}
	got, err := q.ReclaimOrphaned(ctx, c.StaleAfter)
	if err != nil {
		return err
	}
	if g.JSON {
		out := make([]jobChange, len(got))
		for i, r := range got {
			out[i] = jobChange{ID: r.JobID, State: r.State, Generation: r.Generation}
		}
		return writeJSON(env.Stdout, out)
	}
	for _, r := range got {
		fmt.Fprintf(env.Stdout, "job %d reclaimed: %s, generation %d\n", r.JobID, r.State, r.Generation)
	}
	_, err = fmt.Fprintf(env.Stdout, "%d jobs reclaimed\n", len(got))
	return err
}
