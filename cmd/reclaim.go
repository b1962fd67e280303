package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// reclaimCmd is ReclaimOrphaned (recoverStale) from the shell, with the
// worker's reclaim pass's other half: expired jobs are cancelled. Each
// lease carries its owner's stale-after, so there is no threshold to
// give: a job is taken back only once its own owner's promise has lapsed.
type reclaimCmd struct{}

// Run reclaims and prints each job taken back and each expired job
// cancelled (--json: a list of them).
func (c *reclaimCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	got, err := q.ReclaimOrphaned(ctx)
	if err != nil {
		return err
	}
	expired, err := q.CancelExpired(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		out := make([]jobChange, 0, len(got)+len(expired))
		for _, r := range got {
			out = append(out, jobChange{ID: r.JobID, State: r.State, Generation: r.Generation})
		}
		for _, id := range expired {
			out = append(out, jobChange{ID: id, State: lite.StateCancelled})
		}
		return writeJSON(env.Stdout, out)
	}
	for _, r := range got {
		fmt.Fprintf(env.Stdout, "job %d reclaimed: %s, generation %d\n", r.JobID, r.State, r.Generation)
	}
	for _, id := range expired {
		fmt.Fprintf(env.Stdout, "job %d cancelled: it expired before it started\n", id)
	}
	if len(expired) > 0 {
		fmt.Fprintf(env.Stdout, "%d expired jobs cancelled\n", len(expired))
	}
	_, err = fmt.Fprintf(env.Stdout, "%d jobs reclaimed\n", len(got))
	return err
}
