package cmd

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// stepCmd runs a command once per job, from a command of lite work.
type stepCmd struct {
	Name    string   `arg:"" help:"The step's name: its identity in the job."`
	Command []string `arg:"" passthrough:"" help:"The command, after --."`
}

func (c *stepCmd) Help() string {
	return `Run by a command of lite work: the first attempt of the job that gets here runs COMMAND, and if it exits 0 records its stdout (at most 1 MiB) as the step NAME and prints it; every later attempt prints the recorded stdout without running COMMAND. A COMMAND that fails records nothing, and lite step exits with its code. Only the run that holds the job runs a step: once it no longer does, lite step runs nothing, prints nothing and exits 3 (and a record the run makes after losing the job is refused the same way). See docs/durable.md.`
}

func (c *stepCmd) Validate(kctx *kong.Context) error {
	if err := asGiven(kctx, &c.Command); err != nil {
		return err
	}
	if !slices.Contains(kctx.Args, "--") || len(argv(c.Command)) == 0 {
		return errors.New("give the command after --, as in: lite step fetch -- curl -s https://example.com")
	}
	// Before the command runs: a name refused after would run it on every
	// attempt. The command's name prefixes the error already.
	if err := lite.CheckStepName(c.Name); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "step: "))
	}
	return nil
}

// Run prints the step's record, running the command first if the job
// has none.
func (c *stepCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	l, err := runLease()
	if err != nil {
		return err
	}
	out, ok, err := q.LeaseStep(ctx, l, c.Name)
	if err != nil {
		return leaseLostExit(l, err)
	}
	if !ok {
		if out, err = c.runOnce(ctx, env, lite.DefaultMaxPayloadBytes); err != nil {
			return err
		}
		if out, err = q.RecordStep(ctx, l, c.Name, out); err != nil {
			return leaseLostExit(l, err)
		}
	}
	_, err = env.Stdout.Write(out)
	return err
}

// runOnce runs the command, its stdin and stderr lite step's, and returns
// its stdout; a command that fails is an error with its exit code.
func (c *stepCmd) runOnce(ctx context.Context, env Env, max int) ([]byte, error) {
	args := argv(c.Command)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	stdout := &headWriter{max: max + 1}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = env.Stdin, stdout, env.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return nil, exitError{code: exitCode(exit), err: fmt.Errorf("step %s: %s: nothing recorded", safe(c.Name), exit)}
	case err != nil:
		return nil, fmt.Errorf("step %s: %w", safe(c.Name), err)
	case stdout.n > int64(max):
		return nil, fmt.Errorf("step %s: its output is over %d bytes: nothing recorded", safe(c.Name), max)
	}
	return stdout.b, nil
}

// leaseLostExit gives a lost lease lite progress's exit code: the
// command should stop.
func leaseLostExit(l lite.Lease, err error) error {
	if errors.Is(err, lite.ErrLeaseLost) {
		return exitError{code: leaseLostExitCode, err: fmt.Errorf(
			"job %d: this run (generation %d) no longer holds the job, so nothing was written; stop the command: %w",
			l.JobID, l.Generation, err)}
	}
	return err
}

// exitCode is the code a shell reports for a command that ended as exit
// says: 128 + the signal's number for one a signal killed (ExitCode says
// -1 then, which would exit 255).
func exitCode(exit *exec.ExitError) int {
	if status, ok := exit.Sys().(syscall.WaitStatus); ok && status.Signaled() {
		return 128 + int(status.Signal())
	}
	return exit.ExitCode()
}
