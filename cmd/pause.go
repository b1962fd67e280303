package cmd

import (
	"context"
	"fmt"

	"github.com/liteq/lite/lite"
)

// PauseCmd stops a queue's jobs from starting, in every process.
type PauseCmd struct {
	Queue string `arg:"" help:"The queue to pause; it need not have jobs yet."`
}

// Run pauses the queue: running jobs finish, and no new one starts until
// lite resume.
func (c *PauseCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
	if err := q.Pause(ctx, c.Queue); err != nil {
		return err
	}
	return printPaused(env, g, c.Queue, true)
}

// ResumeCmd lets a paused queue's jobs start again.
type ResumeCmd struct {
	Queue string `arg:"" help:"The queue to resume."`
}

// Run resumes the queue.
func (c *ResumeCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
	if err := q.Resume(ctx, c.Queue); err != nil {
		return err
	}
	return printPaused(env, g, c.Queue, false)
}

func printPaused(env Env, g *Globals, queue string, paused bool) error {
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
