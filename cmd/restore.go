package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
)

// restoreCmd puts a backup at --db, or fences --db where it lies, so that
// no lease or id the lost database handed out is handed out again.
type restoreCmd struct {
	Src     string `arg:"" optional:"" name:"src" type:"path" help:"A copy lite backup made, to put at --db."`
	InPlace bool   `name:"in-place" help:"Fence --db as it is, after a restore made by other means (a file copied back, a PostgreSQL point-in-time recovery), before any worker starts."`
	Force   bool   `help:"Replace, or fence, --db though workers are announced live on it (lite workers), as after they were killed; a file another process has open is refused all the same."`
	replicaFlags
}

// Run restores and prints the floor and the jobs made available again
// (--json: {"floor": n, "requeued": n}).
func (c *restoreCmd) Run(ctx context.Context, env Env, g *globals) error {
	switch {
	case c.From != "" && (c.Src != "" || c.InPlace):
		return usagef("give SRC, --from or --in-place, one of them")
	case !c.Timestamp.IsZero() && c.From == "":
		return usagef("--timestamp is for --from: a replica's state at that time")
	case c.From != "":
	case c.InPlace && c.Src != "":
		return usagef("give SRC or --in-place, not both")
	case !c.InPlace && c.Src == "":
		return usagef("give SRC, the backup to restore, or --in-place to fence --db after a restore made by other means")
	}
	rep, err := c.restore(ctx, g.DB)
	if err != nil {
		return withWorkersHint(err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Floor    int64 `json:"floor"`
			Requeued int64 `json:"requeued"`
		}{rep.Floor, rep.Requeued})
	}
	what := "fenced " + safe(lite.Redact(g.DB))
	if c.From != "" {
		what = fmt.Sprintf("restored %s to %s", safe(replicate.Redact(string(c.From))), safe(g.DB))
	} else if !c.InPlace {
		what = fmt.Sprintf("restored %s to %s", safe(c.Src), safe(g.DB))
	}
	_, err = fmt.Fprintf(env.Stdout, "%s: %d running jobs available again; every id and generation from now on is above %d\n", what, rep.Requeued, rep.Floor)
	return err
}

func (c *restoreCmd) restore(ctx context.Context, db string) (lite.FenceReport, error) {
	if err := checkDB(db, !c.InPlace); err != nil {
		return lite.FenceReport{}, err
	}
	if c.From != "" {
		return c.fromReplica(ctx, db, lite.RestoreOptions{Force: c.Force})
	}
	if !c.InPlace {
		return lite.Restore(ctx, c.Src, db, lite.RestoreOptions{Force: c.Force})
	}
	if !lite.IsServerURL(db) {
		return lite.FenceInPlace(ctx, db, lite.RestoreOptions{Force: c.Force})
	}
	// The queue opens here, not through kong's binding: restoring SRC
	// must not hold --db open while it replaces it.
	q, err := lite.Open(ctx, db, lite.Options{})
	if err != nil {
		return lite.FenceReport{}, err
	}
	rep, err := c.fence(ctx, q)
	return rep, errors.Join(err, q.Close())
}

// fence fences q, unless without --force workers are announced live on
// it: their running jobs, made available, would start a second time
// while the first still runs.
func (c *restoreCmd) fence(ctx context.Context, q *lite.Queue) (lite.FenceReport, error) {
	if !c.Force {
		workers, err := q.Workers(ctx)
		if err != nil {
			return lite.FenceReport{}, err
		}
		if len(workers) > 0 {
			return lite.FenceReport{}, fmt.Errorf("fence: %w: %d live would see their running jobs started again; stop them first", lite.ErrWorkersRunning, len(workers))
		}
	}
	return q.FenceRestore(ctx)
}
