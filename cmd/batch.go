package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// batchCmd prints a batch's progress.
type batchCmd struct {
	ID int64 `arg:"" help:"The batch's id."`
}

// batchJSON is a batch as lite batch --json prints it.
type batchJSON struct {
	ID         int64     `json:"id"`
	Total      int       `json:"total"`
	Done       int       `json:"done"`
	Dead       int       `json:"dead"`
	Cancelled  int       `json:"cancelled"`
	Pending    int       `json:"pending"`
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
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
		return writeJSON(env.Stdout, batchJSON{ID: b.ID, Total: b.Total, Done: b.Done, Dead: b.Dead,
			Cancelled: b.Cancelled, Pending: b.Pending(), CreatedAt: b.CreatedAt.UTC(), FinishedAt: b.FinishedAt.UTC()})
	}
	state := "pending"
	if !b.FinishedAt.IsZero() {
		state = "finished"
	}
	_, err = fmt.Fprintf(env.Stdout, "batch %d: %s, %d jobs: %d done, %d dead, %d cancelled, %d pending\n",
		b.ID, state, b.Total, b.Done, b.Dead, b.Cancelled, b.Pending())
	return err
}
