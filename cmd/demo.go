package cmd

import (
	"context"
	"errors"

	"github.com/liteq/lite/cmd/demo"
)

// demoCmd is lite demo; the demo is cmd/demo's.
type demoCmd struct {
	Options demo.Options `embed:""`
}

// Run plays the demo.
func (c *demoCmd) Run(ctx context.Context, env Env) error {
	err := demo.Run(ctx, c.Options, env.Stdout)
	if errors.Is(err, demo.ErrUsage) {
		return usageError{err}
	}
	return err
}
