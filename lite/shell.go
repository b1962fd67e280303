package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ParkedExitCode is the exit status with which `lite sleep` and `lite
// await-signal` say that they parked the job: the command that ran them
// exits with it too (`lite sleep 1h || exit $?`), and `lite work`, seeing
// it with a park recorded for the run, parks the job rather than fail it.
const ParkedExitCode = 75

// parkRecord is a park a process asked for its run (see requestPark).
type parkRecord struct {
	Until  int64  `json:"until"`
	Reason string `json:"reason"`
	Signal string `json:"signal,omitempty"`
}

// outside is the durable view of lease l for a process that does not
// hold it (a command of `lite work`): its lost lease is its error alone,
// and each lookup checks the lease, so that a command of a run that lost
// its job gets ErrLeaseLost, not a record.
func (q *Queue) outside(l Lease) *durable {
	d := newDurable(q, l, func(error) {})
	d.fenced = true
	return d
}

// SleepLease is Sleep for a process that does not hold lease l itself
// (`lite sleep`): its sleep is named, not numbered, so a second sleep of
// the same name in the job passes with the first. It returns nil once the
// recorded wake time passed; else it records the park for the run (see
// ParkRequested) and returns the *ParkError.
func (q *Queue) SleepLease(ctx context.Context, l Lease, name string, d time.Duration) error {
	if name == "" || len(name) > MaxStepNameBytes || !isText(name) {
		return fmt.Errorf("sleep %q: %w: a sleep's name is text (UTF-8, no NUL) of 1 to %d bytes", name, ErrInvalid, MaxStepNameBytes)
	}
	dur := q.outside(l)
	err := dur.sleep(ctx, reservedStep+"sleep:"+name, func(now time.Time) time.Time { return now.Add(d) })
	return dur.requestPark(ctx, err)
}

// AwaitSignalLease is AwaitSignal for a process that does not hold lease
// l itself (`lite await-signal`): one await of each signal name per job.
// A park is recorded for the run, as SleepLease's.
func (q *Queue) AwaitSignalLease(ctx context.Context, l Lease, name string, timeout time.Duration) ([]byte, error) {
	if strings.HasSuffix(name, awaitedSuffix) {
		// Its checkpoint would be another name's record of what it got.
		return nil, fmt.Errorf("await signal %q: %w: a shell await's name cannot end in %q", name, ErrInvalid, awaitedSuffix)
	}
	dur := q.outside(l)
	p, err := dur.await(ctx, name, reservedStep+"signal:"+name, timeout)
	return p, dur.requestPark(ctx, err)
}

// requestPark records err's park, if it is one, as the run's: the first
// a run records stands.
func (d *durable) requestPark(ctx context.Context, err error) error {
	var p *ParkError
	if !errors.As(err, &p) {
		return err
	}
	b, _ := json.Marshal(parkRecord{Until: p.Until.UnixMilli(), Reason: p.Reason, Signal: p.Signal}) // always marshals
	if _, _, err := d.q.recordStep(ctx, d.lease, parkName(d.lease), b); err != nil {
		return err
	}
	return p
}

func parkName(l Lease) string { return fmt.Sprintf("%spark@%d", reservedStep, l.Generation) }

// ParkRequested returns the park a process recorded for the handler's
// run with SleepLease or AwaitSignalLease, or nil: `lite work` returns it
// when its command exits with ParkedExitCode.
func ParkRequested(ctx context.Context) (*ParkError, error) {
	d, err := durableOf(ctx)
	if err != nil {
		return nil, err
	}
	b, ok, err := d.q.StepResult(ctx, d.lease.JobID, parkName(d.lease))
	if err != nil || !ok {
		return nil, err
	}
	var r parkRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("park request: %w", err)
	}
	return &ParkError{Until: fromMillis(r.Until), Reason: r.Reason, Signal: r.Signal}, nil
}
