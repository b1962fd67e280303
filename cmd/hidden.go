package cmd

import (
	"context"

	"github.com/liteq/lite/cmd/bench"
	"github.com/liteq/lite/cmd/demo"
)

// The hidden commands are those lite runs of itself, never the user: each
// is the entry point of a child process of the subpackage that owns it.

// benchChildCmd is lite bench-child, the other process of lite bench's
// cross-process figures, on --db.
type benchChildCmd struct {
	Flags bench.ChildFlags `embed:""`
}

func (c *benchChildCmd) Run(ctx context.Context, env Env, g *globals) error {
	return bench.Child(ctx, c.Flags, g.DB, env.Stdout)
}

// demoJobCmd is lite demo-job, the job that lite demo's workers run.
type demoJobCmd struct {
	Generation int64 `env:"LITE_JOB_GENERATION" help:"The job's generation, which lite work sets."`
}

func (c *demoJobCmd) Run(ctx context.Context, env Env) error {
	return demo.Job(ctx, c.Generation, env.Stdout)
}
