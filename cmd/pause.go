package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// pauseCmd stops a queue's jobs from starting, in every process.
type pauseCmd struct {
	Queue string `arg:"" predictor:"queue" help:"The queue to pause; it need not have jobs yet."`
}

// Run pauses the queue: running jobs finish, and no new one starts until
// lite resume.
func (c *pauseCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := q.Pause(ctx, c.Queue); err != nil {
		return err
	}
	return printPaused(env, g, c.Queue, true)
}

// resumeCmd lets a paused queue's jobs start again.
type resumeCmd struct {
	Queue string `arg:"" predictor:"queue" help:"The queue to resume."`
}

// Run resumes the queue.
func (c *resumeCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := q.Resume(ctx, c.Queue); err != nil {
		return err
	}
	return printPaused(env, g, c.Queue, false)
}

func printPaused(env Env, g *globals, queue string, paused bool) error {
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Queue  string `json:"queue"`
			Paused bool   `json:"paused"`
		}{queue, paused})
	}
	word := "resumed"
	if paused {
		word = "paused"
	}
	_, err := fmt.Fprintf(env.Stdout, "queue %s %s\n", safe(queue), word)
	return err
}
