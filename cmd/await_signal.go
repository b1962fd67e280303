package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/liteq/lite/lite"
)

// awaitSignalCmd waits for a signal, from a command of lite work.
type awaitSignalCmd struct {
	Name    string        `arg:"" help:"The signal's name."`
	Timeout time.Duration `help:"Stop waiting after this long (0: never); then exit 4."`
}

// signalTimeoutExitCode is lite await-signal's exit status once its
// timeout passed with no signal.
const signalTimeoutExitCode = 4

func (c *awaitSignalCmd) Help() string {
	return `Run by a command of lite work: if a signal NAME was sent to the job (lite signal), consume it and print its payload; otherwise ask lite work to park the job until one comes or --timeout passes, and exit 75; the command should exit 75 too (lite await-signal approved || exit $?). When the job runs again this prints the payload, the same on every later attempt, or exits 4 once the timeout passed. One await of each name per job. See docs/durable.md.`
}

// Run prints the payload, or parks the job.
func (c *awaitSignalCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	if c.Timeout < 0 {
		return usagef("await-signal: a negative --timeout")
	}
	l, err := runLease()
	if err != nil {
		return err
	}
	payload, err := q.AwaitSignalLease(ctx, l, c.Name, c.Timeout)
	if errors.Is(err, lite.ErrSignalTimeout) {
		return exitError{code: signalTimeoutExitCode, err: err}
	}
	if err != nil {
		return parkedExit(l, err)
	}
	_, err = env.Stdout.Write(payload)
	return err
}
