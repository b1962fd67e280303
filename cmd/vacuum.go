package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/liteq/lite/lite"
)

// vacuumCmd compacts the database, and converts a SQLite file made before
// retention so that cleaning gives space back.
type vacuumCmd struct {
	Force bool `help:"Rewrite the file even while workers run on it (lite workers): their jobs may be reclaimed and run twice."`
}

// Run vacuums and prints the size before and after (--json: {"before":
// bytes, "after": bytes}).
func (c *vacuumCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	rep, err := q.Vacuum(ctx, lite.VacuumOptions{Force: c.Force})
	if err != nil {
		return withWorkersHint(err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Before int64 `json:"before"`
			After  int64 `json:"after"`
		}{rep.Before, rep.After})
	}
	what := "the file"
	if lite.IsServerURL(g.DB) {
		what = "lite_jobs (PostgreSQL keeps the space for its own reuse)"
	}
	_, err = fmt.Fprintf(env.Stdout, "vacuumed %s: %s before, %s after\n", what, size(rep.Before), size(rep.After))
	return err
}

// withWorkersHint says what to do about ErrWorkersRunning.
func withWorkersHint(err error) error {
	if errors.Is(err, lite.ErrWorkersRunning) {
		return fmt.Errorf("%w (lite workers lists them), or give --force", err)
	}
	return err
}

// size writes bytes in the largest binary unit that keeps a whole number
// in front.
func size(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f, i := float64(n), 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
