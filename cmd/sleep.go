package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// sleepCmd parks a job of lite work for a while.
type sleepCmd struct {
	Duration time.Duration `arg:"" help:"How long the job sleeps (90s, 2h, 7d)."`
	Name     string        `default:"sleep" help:"The sleep's identity in the job: give each sleep of a script its own."`
}

func (c *sleepCmd) Help() string {
	return `Run by a command of lite work: the first time the job gets here it records its wake time, asks lite work to park the job, and exits 75; the command should exit 75 too (lite sleep 2h || exit $?). The job then waits until its wake time holding no slot, with no attempt spent, and runs the command again, whose finished steps print their records; this time lite sleep exits 0 at once. See docs/durable.md.`
}

// Run records the sleep, and says whether the job parks.
func (c *sleepCmd) Run(ctx context.Context, q *lite.Queue) error {
	if c.Duration < 0 {
		return usagef("sleep: a negative duration")
	}
	l, err := runLease()
	if err != nil {
		return err
	}
	return parkedExit(l, q.SleepLease(ctx, l, c.Name, c.Duration))
}

// parkedExit turns a park into lite.ParkedExitCode, a lost lease into
// exit 3.
func parkedExit(l lite.Lease, err error) error {
	var p *lite.ParkError
	if errors.As(err, &p) {
		return exitError{code: lite.ParkedExitCode, err: fmt.Errorf("job %d %s: exit %d so that lite work parks it", l.JobID, p, lite.ParkedExitCode)}
	}
	return leaseLostExit(l, err)
}
