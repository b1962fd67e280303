package cmd

import (
	"context"
	"errors"

	"github.com/liteq/lite/cmd/demo"
)

// DemoCmd is lite demo; the demo is cmd/demo's.
type DemoCmd struct {
	Options demo.Options `embed:""`
}

// Run plays the demo.
func (c *DemoCmd) Run(ctx context.Context, env Env) error {
	err := demo.Run(ctx, c.Options, env.Stdout)
	if errors.Is(err, demo.ErrUsage) {
		return UsageError{err}
	}
	return err
}
