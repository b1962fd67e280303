package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ErrSignalTimeout is what AwaitSignal returns when its timeout passed
// with no signal: the handler decides what that means.
var ErrSignalTimeout = errors.New("no signal before the timeout")

// signalTargetSQL takes the job's row (on PostgreSQL, locking it: see
// parkLockSQL) and reads its state.
var signalTargetSQL = stmt{
	sqlite:   `select state from lite_jobs where id = ?`,
	postgres: `select state from lite_jobs where id = $1 for update`,
}

// MaxSignals bounds the signals a job keeps unconsumed: a sender in a loop
// cannot grow the file without end while its job never awaits them.
const MaxSignals = 1000

// ErrSignalsFull refuses a signal to a job that keeps MaxSignals
// unconsumed already: nothing was sent.
var ErrSignalsFull = errors.New("the job's signals are full")

// insertSignalSQL sends a signal, unless the job keeps MaxSignals
// unconsumed or has had a signal of its idempotency key: it inserts no
// row then.
var insertSignalSQL = stmt{
	sqlite: `insert into lite_signals (job_id, name, payload, sent_at, idempotency_key) select ?1, ?2, ?3, ?4, ?5
where (select count(*) from lite_signals where job_id = ?1 and consumed_at is null) < ` + fmt.Sprint(MaxSignals) + `
on conflict (job_id, idempotency_key) where idempotency_key is not null do nothing`,
	postgres: `insert into lite_signals (job_id, name, payload, sent_at, idempotency_key) select $1::bigint, $2::text, $3::bytea, $4::bigint, $5::text
where (select count(*) from lite_signals where job_id = $1 and consumed_at is null) < ` + fmt.Sprint(MaxSignals) + `
on conflict (job_id, idempotency_key) where idempotency_key is not null do nothing`,
}

// signalKeySentSQL says whether the job has had a signal of the key.
var signalKeySentSQL = stmt{
	sqlite:   `select exists (select 1 from lite_signals where job_id = ? and idempotency_key = ?)`,
	postgres: `select exists (select 1 from lite_signals where job_id = $1 and idempotency_key = $2)`,
}

// wakeSignalledSQL makes a job parked awaiting the signal available now.
var wakeSignalledSQL = stmt{
	sqlite: `update lite_jobs set run_at = ?, parked = null, parked_on = null
where id = ? and state = 'available' and parked = 'signal' and parked_on = ?`,
	postgres: `update lite_jobs set run_at = $1, parked = null, parked_on = null
where id = $2 and state = 'available' and parked = 'signal' and parked_on = $3`,
}

// Signal sends job id the signal name with payload. It is kept until the
// job's AwaitSignal of that name consumes it, each signal once, in the
// order sent; a job parked awaiting it is available at once, and a
// worker's wake-ups start it. A signal sent before the job awaits it is
// kept all the same. A missing job is ErrNotFound; a finished one
// ErrInvalidState; one that keeps MaxSignals unconsumed, ErrSignalsFull.
// The payload is at most Options.MaxPayloadBytes. A sender that may send
// one signal twice (a webhook delivered again) uses SignalOnce.
func (q *Queue) Signal(ctx context.Context, id int64, name string, payload []byte) error {
	_, err := q.signal(ctx, id, name, "", payload)
	return err
}

// SignalOnce is Signal with an idempotency key: a signal of key that job
// id has had already, consumed or not, is not sent again, and sent is
// false. A duplicate is then never left for a later AwaitSignal of the
// same name to consume. A key has 1 to 200 bytes (MaxStepNameBytes) and
// stays with the job as long as it is kept.
func (q *Queue) SignalOnce(ctx context.Context, id int64, name, key string, payload []byte) (sent bool, err error) {
	if key == "" || len(key) > MaxStepNameBytes {
		return false, fmt.Errorf("signal job %d: %w", id, fmt.Errorf("%w: an idempotency key has 1 to %d bytes", ErrInvalid, MaxStepNameBytes))
	}
	return q.signal(ctx, id, name, key, payload)
}

// signal is Signal's and SignalOnce's; key "" is none.
func (q *Queue) signal(ctx context.Context, id int64, name, key string, payload []byte) (sent bool, err error) {
	if err := checkSignalName(name); err != nil {
		return false, fmt.Errorf("signal job %d: %w", id, err)
	}
	switch {
	case len(payload) > q.opts.MaxPayloadBytes:
		return false, fmt.Errorf("signal job %d: payload of %d bytes: %w (limit %d)", id, len(payload), ErrTooLarge, q.opts.MaxPayloadBytes)
	case payload == nil:
		payload = []byte{}
	}
	var keyArg any
	if key != "" {
		keyArg = key
	}
	err = q.writeTx(ctx, q.sql(insertSignalSQL), func(tx txConn) error {
		var state State
		if err := tx.QueryRowContext(ctx, q.sql(signalTargetSQL), id).Scan(&state); errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		if state.Finished() {
			return fmt.Errorf("%w: the job is %s", ErrInvalidState, state)
		}
		now := q.nowOn(tx).UnixMilli()
		res, err := tx.ExecContext(ctx, q.sql(insertSignalSQL), id, name, payload, now, keyArg)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			var had bool
			if key != "" {
				if err := tx.QueryRowContext(ctx, q.sql(signalKeySentSQL), id, key).Scan(&had); err != nil {
					return err
				}
			}
			if had {
				return nil // nothing to send or wake
			}
			return fmt.Errorf("%w (it keeps at most %d unconsumed)", ErrSignalsFull, MaxSignals)
		}
		sent = true
		_, err = tx.ExecContext(ctx, q.sql(wakeSignalledSQL), now, id, name)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("signal job %d: %w", id, classify(err))
	}
	if !sent {
		return false, nil
	}
	q.notify()
	return true, q.afterWrite(ctx, fmt.Sprintf("signal job %d", id))
}

// consumeSignalSQL consumes the oldest unconsumed signal of the name. Its
// fence is the step that records what it consumed, in its transaction
// (see consumeSignal): only the current lease records it, so only the
// current lease's consumption commits.
var consumeSignalSQL = stmt{
	sqlite: `update lite_signals set consumed_by_generation = ?2, consumed_at = ?4
where id = (select id from lite_signals where job_id = ?1 and name = ?3 and consumed_at is null order by id limit 1)
  and consumed_at is null
returning payload`,
	postgres: `update lite_signals set consumed_by_generation = $2, consumed_at = $4
where id = (select id from lite_signals where job_id = $1 and name = $3 and consumed_at is null order by id limit 1)
  and consumed_at is null
returning payload`,
}

// awaitedSuffix ends the name of the record of what an await got, after
// its checkpoint's name.
const awaitedSuffix = ":got"

// awaited is an AwaitSignal's record: the payload it consumed, or that
// its timeout passed.
type awaited struct {
	Payload  []byte `json:"payload,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
}

// AwaitSignal returns the payload of a signal name sent to the job (see
// Queue.Signal): one sent already, before the wait began or while the
// job was parked, is consumed at once; otherwise the job parks until one
// comes or timeout passes (0: no timeout), and AwaitSignal returns a
// *ParkError the handler returns, as Sleep's. The run that comes back
// gets here again and consumes it. What an await got is recorded with
// the job's steps, so every later attempt gets the same payload, or
// ErrSignalTimeout once the timeout passed with none. A run's awaits of
// one name are told apart by their order, as its sleeps are.
//
// Consuming is an owner write: a stale lease consumes nothing and gets
// ErrLeaseLost.
func AwaitSignal(ctx context.Context, name string, timeout time.Duration) ([]byte, error) {
	d, err := durableOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("await signal %q: %w", name, err)
	}
	p, err := d.await(ctx, name, d.next("signal:"+name), timeout)
	if err != nil {
		return nil, fmt.Errorf("await signal %q: %w", name, err)
	}
	return p, nil
}

// await is AwaitSignal's, its checkpoint named at.
func (d *durable) await(ctx context.Context, name, at string, timeout time.Duration) ([]byte, error) {
	if err := checkSignalName(name); err != nil {
		return nil, err // a wait for a name no Signal can send would never end
	}
	outcome := at + awaitedSuffix
	if b, ok, err := d.recorded(ctx, outcome); err != nil || ok {
		return decodeAwaited(b, err)
	}
	start := d.q.opts.Now()
	b, got, err := d.q.consumeSignal(ctx, d.lease, name, outcome)
	if err != nil || got {
		if err == nil {
			d.remember(outcome, b, start)
			d.report(EventSignalReceived)
		}
		return decodeAwaited(b, d.failed(err))
	}
	deadline := never
	if timeout > 0 {
		deadline = d.q.opts.Now().Add(timeout)
	}
	until, err := d.checkpoint(ctx, at, deadline)
	if err != nil {
		return nil, err
	}
	if d.q.opts.Now().Before(until) {
		return nil, &ParkError{Until: until, Reason: ParkedSignal, Signal: name}
	}
	timedOut, _ := json.Marshal(awaited{TimedOut: true})
	b, _, err = d.record(ctx, outcome, timedOut)
	return decodeAwaited(b, err)
}

// consumeSignal consumes the job's oldest unconsumed signal name and
// records its payload as the step outcome, in one transaction under
// lease l; got is false when no signal waits.
func (q *Queue) consumeSignal(ctx context.Context, l Lease, name, outcome string) (record []byte, got bool, err error) {
	err = q.writeTx(ctx, q.sql(consumeSignalSQL), func(tx txConn) error {
		var payload []byte
		err := tx.QueryRowContext(ctx, q.sql(consumeSignalSQL), l.JobID, l.Generation, name, q.nowOn(tx).UnixMilli()).Scan(&payload)
		if errors.Is(err, sql.ErrNoRows) {
			return q.stillOwned(ctx, tx, l)
		} else if err != nil {
			return err
		}
		b, _ := json.Marshal(awaited{Payload: payload}) // bytes always marshal
		var inserted bool
		if record, inserted, err = q.recordStepOn(ctx, tx, l, outcome, b); err == nil && !inserted {
			return recordedBefore{record} // the signal stays for the await after
		}
		got = err == nil
		return err
	})
	if kept, ok, rest := keptRecord(err); ok {
		return kept, true, nil
	} else if err = rest; err != nil {
		return nil, false, fmt.Errorf("consume: %w", q.explainLoss(ctx, classify(err), l))
	}
	return record, got, nil
}

// stillOwned returns ErrLeaseLost unless l is the job's current lease.
func (q *Queue) stillOwned(ctx context.Context, c conn, l Lease) error {
	var owned int
	if err := c.QueryRowContext(ctx, q.sql(ownsSQL), l.JobID, l.Generation).Scan(&owned); err != nil {
		return err
	}
	if owned == 0 {
		return leaseLost(l)
	}
	return nil
}

func decodeAwaited(b []byte, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	var a awaited
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("its record does not decode: %w", err)
	}
	if a.TimedOut {
		return nil, ErrSignalTimeout
	}
	if a.Payload == nil {
		a.Payload = []byte{}
	}
	return a.Payload, nil
}

// checkSignalName refuses a signal name that Signal cannot send.
func checkSignalName(name string) error {
	if name == "" || len(name) > MaxStepNameBytes {
		return fmt.Errorf("%w: a signal's name has 1 to %d bytes", ErrInvalid, MaxStepNameBytes)
	}
	if !isText(name) {
		return fmt.Errorf("%w: %s", ErrInvalid, notText)
	}
	return nil
}
