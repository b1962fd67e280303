package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// RunStep runs fn once per job and returns its result: the first attempt
// that gets through fn records the result, as JSON, under name, and every
// later attempt of the job (a retry, a reclaim, a release, a restart of
// the process) gets the recorded result back without running fn. Names
// are the identity: the same name asked for again returns its record,
// whatever fn is now. Renaming a step, or changing what its result means,
// runs the renamed step once more; removing one leaves its record unread.
//
// Recording is an owner write like an ack: only the handler's current
// lease records a step, and a record is never overwritten. A handler
// whose lease is lost gets a *LeaseLostError (ErrLeaseLost), its context
// is cancelled, and fn's result is dropped: fn may have run, and its
// effect outside the queue's file is at-least-once (RunStepTx makes writes
// to the file exactly once). If fn fails, nothing is recorded and RunStep
// returns its error: returned from the handler, the job's retry policy
// applies (Permanent ends the job). A job records at most MaxSteps steps
// and MaxStepsBytes of results (ErrStepsFull past them); each result at
// most Options.MaxPayloadBytes. Outside a handler RunStep returns
// ErrNotRunning.
func RunStep[T any](ctx context.Context, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	d, recorded, ok, err := lookUpStep(ctx, name)
	if err != nil || ok {
		return decodeStep[T](name, recorded, err)
	}
	v, err := fn(ctx)
	if err != nil {
		return zero, lossOr(ctx, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("step %q: %w", name, err)
	}
	stored, inserted, err := d.record(ctx, name, b)
	if inserted {
		d.report(EventStep)
	}
	return decodeStep[T](name, stored, err)
}

// RunStepTx is RunStep for fn that writes to the app's own tables in the
// queue's database: its writes through tx commit in the one transaction
// that records the step, so they happen once per job or not at all. A
// stale lease's RunStepTx rolls fn's writes back and returns ErrLeaseLost.
// On SQLite tx holds the file's write lock, as CommitWithAck's does: fn
// must be short, write through tx only, and make no queue call that
// writes. On PostgreSQL it is a transaction of its own.
func RunStepTx[T any](ctx context.Context, name string, fn func(ctx context.Context, tx *sql.Tx) (T, error)) (T, error) {
	var zero T
	d, recorded, ok, err := lookUpStep(ctx, name)
	if err != nil || ok {
		return decodeStep[T](name, recorded, err)
	}
	var stored []byte
	start := d.q.opts.Now()
	err = d.q.writeTx(ctx, d.q.sql(recordStepSQL), func(tx txConn) error {
		v, err := fn(ctx, tx.tx)
		if err != nil {
			return writesError{"its writes", err}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return writesError{"its writes", err}
		}
		if len(b) > d.q.opts.MaxPayloadBytes {
			return fmt.Errorf("result of %d bytes: %w (limit %d)", len(b), ErrTooLarge, d.q.opts.MaxPayloadBytes)
		}
		var inserted bool
		if stored, inserted, err = d.q.recordStepOn(ctx, tx, d.lease, name, b); err == nil && !inserted {
			return recordedBefore{stored}
		}
		return err
	})
	if record, ok, rest := keptRecord(err); ok {
		d.remember(name, record, start)
		return decodeStep[T](name, record, nil)
	} else if err = rest; err != nil {
		return zero, d.failed(fmt.Errorf("step %q: %w", name, lossOr(ctx, d.q.explainLoss(ctx, classify(err), d.lease))))
	}
	d.remember(name, stored, start)
	d.report(EventStep)
	return decodeStep[T](name, stored, nil)
}

// lookUpStep finds the handler's run and the step it recorded as name.
func lookUpStep(ctx context.Context, name string) (d *durable, recorded []byte, ok bool, err error) {
	if d, err = durableOf(ctx); err != nil {
		return nil, nil, false, fmt.Errorf("step %q: %w", name, err)
	}
	if err := CheckStepName(name); err != nil {
		return nil, nil, false, err
	}
	if recorded, ok, err = d.recorded(ctx, name); ok {
		d.report(EventStepReplayed)
	}
	return d, recorded, ok, err
}

func decodeStep[T any](name string, b []byte, err error) (T, error) {
	var v T
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("step %q: its record does not decode: %w", name, err)
	}
	return v, nil
}
