package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// The exit codes of the commands that wait for jobs or print their
// results (lite wait, lite enqueue --wait, lite result), besides 0 for
// done, 1 for an error and 2 for a usage error or a job not found.
// ExitDead is also lite work --exit-when-empty's when a job it ran died.
const (
	ExitDead       = 3
	ExitCancelled  = 4
	ExitUnfinished = 5 // timed out, or no result yet
)

// exitCodes is the part of their --help that says so.
const exitCodes = `Exit codes: 0 done (the result is on standard output, as stored), 2 a
job not found or a usage error, 3 dead, 4 cancelled, 5 timed out or not
finished yet, 1 any other error. Errors go to standard error, escaped.`

// waitCmd waits for jobs to finish.
type waitCmd struct {
	IDs     []int64       `arg:"" name:"id" help:"The jobs' ids."`
	Timeout time.Duration `help:"Give up after this long (e.g. 30s, 5m); 0 waits as long as it takes."`
}

// Help is the longer text `lite wait --help` prints.
func (c *waitCmd) Help() string {
	return `Waits until every job given is finished (done, dead or cancelled; a
failed attempt that will be retried is no end), then prints the result
of each done job on standard output, as the job stored it, in the order
given (with --json: each job, as lite show --json prints it). A worker
in another process wakes the wait when it commits; nothing polls.
Ending the wait (a timeout, Ctrl-C) leaves the jobs as they are.

` + exitCodes
}

// Run waits for the jobs and prints their results.
func (c *waitCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	return waitAndPrint(ctx, env, g.JSON, q, c.IDs, c.Timeout)
}

// errTimedOut is the cause of a wait's end when its --timeout passed.
var errTimedOut = errors.New("timed out")

// waitAndPrint waits for the jobs, at most timeout (0: no limit), and
// prints them as lite wait does.
func waitAndPrint(ctx context.Context, env Env, asJSON bool, q *lite.Queue, ids []int64, timeout time.Duration) error {
	if timeout < 0 {
		return usagef("--timeout %s is negative", timeout)
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimedOut)
		defer cancel()
	}
	jobs, err := q.WaitAll(ctx, ids)
	switch {
	case errors.Is(err, errTimedOut):
		return exitError{fmt.Errorf("wait: timed out after %s; the jobs go on", timeout), ExitUnfinished}
	case errors.Is(err, lite.ErrNotFound):
		return exitError{err, 2}
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return interrupted("wait: interrupted; the jobs go on")
	case err != nil:
		return err
	}
	return printEnds(env, asJSON, jobs)
}

// printEnds prints finished jobs: each done job's result as stored (or
// each job as JSON) on standard output, and a line on standard error for
// each that did not end done. The error returned, with the exit code of
// the worst end (dead before cancelled), is the last such line's.
func printEnds(env Env, asJSON bool, jobs []*lite.Job) error {
	var last exitError
	for _, j := range jobs {
		var err error
		if asJSON {
			err = writeJSON(env.Stdout, j)
		} else if j.State == lite.StateDone {
			_, err = env.Stdout.Write(j.Result)
		}
		if err != nil {
			return err
		}
		end := j.Err()
		if end == nil {
			continue
		}
		if last.err != nil {
			fmt.Fprintf(env.Stderr, "lite: %s\n", escapeLine(last.err.Error()))
		}
		code := ExitCancelled
		if j.State == lite.StateDead || last.code == ExitDead {
			code = ExitDead
		}
		last = exitError{end, code}
	}
	if last.err != nil {
		return last
	}
	return nil
}

// checkWait refuses enqueue's wait flags where they cannot apply.
func (c *enqueueCmd) checkWait() error {
	switch {
	case c.Timeout != 0 && !c.Wait:
		return usagef("enqueue: --timeout applies to --wait only")
	case c.Wait && c.File != "":
		return usagef("enqueue: --wait takes one job, not --file")
	}
	return nil
}
