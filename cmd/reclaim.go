package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// reclaimCmd is ReclaimOrphaned (recoverStale) from the shell. Each lease
// carries its owner's stale-after, so there is no threshold to give: a job
// is taken back only once its own owner's promise has lapsed.
type reclaimCmd struct{}

// Run reclaims and prints each job taken back (--json: a list of them).
func (c *reclaimCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	got, err := q.ReclaimOrphaned(ctx)
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
