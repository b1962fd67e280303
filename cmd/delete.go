package cmd

import (
	"context"

	"github.com/liteq/lite/lite"
)

// deleteCmd deletes the jobs a filter matches, never a running one.
type deleteCmd struct {
	bulkFilter
}

// Help is the longer text `lite delete --help` prints.
func (c *deleteCmd) Help() string {
	return `Deletes available and finished jobs that match every flag given, in
batches of 1000, each its own short transaction, so workers keep
running. A running job is never deleted: cancel it first. --dry-run
prints how many would go.`
}

// Run deletes and prints how many jobs went.
func (c *deleteCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if !c.set() {
		return usagef("delete: give filter flags (--state, --queue, --kind, --older-than, or --all)")
	}
	return c.run(ctx, env, g, q, lite.BulkDelete)
}
