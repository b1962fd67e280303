package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrParked is what a handler returns, wrapped in a *ParkError, when Sleep
// or AwaitSignal parked its job: return it as it is.
var ErrParked = errors.New("parked")

// The reasons a job is parked: Job.Parked.
const (
	ParkedSleep  = "sleep"    // until its Sleep's time
	ParkedSignal = "signal"   // until a signal of the name Job.ParkedOn comes, or its timeout
	ParkedAwait  = "children" // blocked until the jobs its Await names have ended
)

// ParkError is the error Sleep and AwaitSignal return when the job must
// wait: a handler returns it (wrapped or not), and its worker parks the
// job, available again at Until, without spending an attempt and holding
// no slot meanwhile.
type ParkError struct {
	Until  time.Time
	Reason string  // ParkedSleep, ParkedSignal or ParkedAwait
	Signal string  // the awaited signal's name
	Jobs   []int64 // the jobs Await waits for
}

func (p *ParkError) Error() string {
	switch p.Reason {
	case ParkedSignal:
		return fmt.Sprintf("parked awaiting signal %q", p.Signal)
	case ParkedAwait:
		return fmt.Sprintf("parked awaiting %d jobs", len(p.Jobs))
	}
	return fmt.Sprintf("parked until %s", p.Until.UTC().Format(time.RFC3339Nano))
}

// Unwrap makes errors.Is(err, ErrParked) hold.
func (p *ParkError) Unwrap() error { return ErrParked }

// invalid says why p is a park that Sleep, AwaitSignal and Await never
// make, for job self: one a handler built by hand, which a worker fails
// as an attempt rather than park the job on nothing (run again at once,
// no attempt spent, for ever) or on itself (blocked for good).
func (p *ParkError) invalid(self int64) error {
	switch p.Reason {
	case ParkedSleep, ParkedSignal:
		switch {
		case p.Until.IsZero():
			return fmt.Errorf("%w: a park error with no time to wake", ErrInvalid)
		case p.Until.After(never):
			return fmt.Errorf("%w: a park error waking after year 9999", ErrInvalid) // its milliseconds would overflow
		case p.Reason == ParkedSignal:
			return checkSignalName(p.Signal) // no Signal could wake it
		}
		return nil
	case ParkedAwait:
		_, err := awaitable(self, p.Jobs)
		return err
	}
	return fmt.Errorf("%w: a park error of reason %q", ErrInvalid, p.Reason)
}

// never is the wake time of a job that awaits a signal with no timeout:
// the last millisecond of year 9999, far beyond any real run_at.
var never = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)

// Sleep parks the job for d: the first time the run gets here it records
// the wake time and returns a *ParkError, which the handler returns:
//
//	if err := lite.Sleep(ctx, time.Hour); err != nil {
//		return err
//	}
//
// The job is then available again at the wake time, under a new
// generation, with no attempt spent and no slot held. The run that comes
// back passes the same Sleep at once (its RunSteps return their records).
// A run's sleeps are told apart by their order in it: the first Sleep is
// always the first. Code that adds or removes a Sleep before another one
// between attempts moves that one's record to it.
func Sleep(ctx context.Context, d time.Duration) error {
	dur, err := durableOf(ctx)
	if err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	return dur.sleep(ctx, dur.next("sleep"), func(now time.Time) time.Time { return now.Add(d) })
}

// SleepUntil is Sleep until t.
func SleepUntil(ctx context.Context, t time.Time) error {
	dur, err := durableOf(ctx)
	if err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	return dur.sleep(ctx, dur.next("sleep"), func(time.Time) time.Time { return t })
}

// sleep records the wake time under name, the first time, and parks the
// job until it passed.
func (d *durable) sleep(ctx context.Context, name string, wake func(now time.Time) time.Time) error {
	until, err := d.checkpoint(ctx, name, wake(d.q.opts.Now()))
	if err != nil {
		return fmt.Errorf("sleep: %w", err)
	}
	if !d.q.opts.Now().Before(until) {
		return nil
	}
	return &ParkError{Until: until, Reason: ParkedSleep}
}

// checkpoint records t under name unless a time is recorded there
// already, and returns the recorded one.
func (d *durable) checkpoint(ctx context.Context, name string, t time.Time) (time.Time, error) {
	b, ok, err := d.recorded(ctx, name)
	if err != nil {
		return time.Time{}, err
	}
	if !ok {
		if b, _, err = d.record(ctx, name, fmt.Appendf(nil, "%d", t.UnixMilli())); err != nil {
			return time.Time{}, err
		}
	}
	var ms int64
	if err := json.Unmarshal(b, &ms); err != nil {
		return time.Time{}, fmt.Errorf("checkpoint %q: %w", name, err)
	}
	return fromMillis(ms), nil
}

// parkLockSQL takes the job's row before a park: on PostgreSQL it locks
// it, so that a Signal that locked it first has committed by the time
// signalWaitsSQL looks for its signal. That look is a statement of its
// own, begun once the lock is held: a statement sees what committed
// before it began, and one that waited for the row would miss the
// signal committed meanwhile, parking a job whose signal is there. The
// guard is parkSQL's.
var parkLockSQL = stmt{
	sqlite:   `select 1 from lite_jobs where id = ?`,
	postgres: `select 1 from lite_jobs where id = $1 for update`,
}

// signalWaitsSQL says whether a signal of the awaited name waits
// unconsumed.
var signalWaitsSQL = stmt{
	sqlite:   `select exists (select 1 from lite_signals where job_id = ? and name = ? and consumed_at is null)`,
	postgres: `select exists (select 1 from lite_signals where job_id = $1 and name = $2 and consumed_at is null)`,
}

// parkSQL gives a lease back as Snooze does, no attempt spent, with the
// job's parked marker set.
var parkSQL = stmt{
	sqlite: `update lite_jobs set ` + releaseSet + `, run_at = ?, parked = ?, parked_on = ?
where id = ? and generation = ? and state = 'running'`,
	postgres: `update lite_jobs set ` + releaseSet + `, run_at = $1, parked = $2, parked_on = $3
where id = $4 and generation = $5 and state = 'running'`,
}

// park parks the leased job as p asks, and returns when it runs again
// (for a job that awaits jobs, blocked, the zero time: when they end). A
// job awaiting a signal that came meanwhile is available at once, its
// marker cleared: the signal is there to consume.
func (q *Queue) park(ctx context.Context, l Lease, p *ParkError) (time.Time, error) {
	if p.Reason == ParkedAwait {
		return q.parkAwaiting(ctx, l, p.Jobs)
	}
	var runAt int64
	err := q.writeTx(ctx, q.sql(parkSQL), func(tx txConn) error {
		var row int
		if err := tx.QueryRowContext(ctx, q.sql(parkLockSQL), l.JobID).Scan(&row); err != nil {
			return ownedRow(err, l)
		}
		var signalled bool
		if err := tx.QueryRowContext(ctx, q.sql(signalWaitsSQL), l.JobID, p.Signal).Scan(&signalled); err != nil {
			return err
		}
		runAt = p.Until.UnixMilli()
		var reason, on any = p.Reason, nil
		if p.Reason == ParkedSignal {
			on = p.Signal
		}
		if signalled {
			runAt, reason, on = q.nowOn(tx).UnixMilli(), nil, nil
		}
		res, err := tx.ExecContext(ctx, q.sql(parkSQL), runAt, reason, on, l.JobID, l.Generation)
		return checkOwned(res, err, l)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("park: %w", q.explainLoss(ctx, classify(err), l))
	}
	q.notify()
	return fromMillis(runAt), nil
}

// ownedRow turns the missing row of a job's read into ErrLeaseLost.
func ownedRow(err error, l Lease) error {
	if errors.Is(err, sql.ErrNoRows) {
		return leaseLost(l)
	}
	return err
}
