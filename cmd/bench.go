package cmd

import (
	"context"

	"github.com/liteq/lite/cmd/bench"
)

// benchCmd is lite bench; the measuring is cmd/bench's.
type benchCmd struct {
	Flags bench.Flags `embed:""`
}

// Run measures every figure and prints the table, or JSON with --json.
func (c *benchCmd) Run(ctx context.Context, env Env, g *globals) error {
	rows, err := bench.Run(ctx, c.Flags, bench.Env{DB: g.DB, Stderr: env.Stderr, Field: safe, Line: escapeLine})
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, rows)
	}
	return bench.Print(env.Stdout, rows)
}
