package lite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// txBounds are what a server enforces on one transaction of lite's: idle
// is the longest it may sit between two statements, statement the longest
// one statement in it may run or wait for a lock (0: no bound but the
// caller's deadline). Both end what a frozen process holds: a process
// stopped inside the transaction (SIGSTOP, a paused VM, a long GC stall)
// leaves it idle, and one stopped before reading a statement's answer
// leaves that statement's locks held; the server then ends its session, or
// cancels its statement, and the transaction rolls back with its locks.
type txBounds struct{ idle, statement time.Duration }

// txBounds are a transaction's default bounds (Options.ServerTxTimeout).
func (q *Queue) txBounds() txBounds {
	return txBounds{idle: q.opts.ServerTxTimeout, statement: q.opts.ServerTxTimeout}
}

// serverTxBoundsSQL sets, for the rest of its transaction, how long the
// server lets it sit idle ($1 ms) and how long each of its statements may
// run ($2 ms; 0 is no bound).
var serverTxBoundsSQL = stmt{
	postgres: `select set_config('idle_in_transaction_session_timeout', $1, true), set_config('statement_timeout', $2, true)`,
}

// boundServerTx sets b on tx, the statement bound cut to what is left of
// ctx's deadline, so that a call returns by its deadline with the server's
// own refusal, which means that nothing was written: a cancel from this
// side could not say whether a statement under way committed. It reports
// whether the deadline set the bound.
func (q *Queue) boundServerTx(ctx context.Context, tx txConn, b txBounds) (byDeadline bool, err error) {
	if deadline, ok := ctx.Deadline(); ok {
		left := time.Until(deadline)
		if left <= 0 {
			return true, context.DeadlineExceeded
		}
		// A little before the deadline, so that the server's refusal
		// arrives before the driver cuts the connection at it.
		left -= min(left/10, 100*time.Millisecond)
		if b.statement == 0 || left < b.statement {
			b.statement, byDeadline = left, true
		}
	}
	_, err = tx.ExecContext(ctx, q.sql(serverTxBoundsSQL), serverMillis(b.idle), serverMillis(b.statement))
	return byDeadline, err
}

// serverMillis is d as a server's setting in milliseconds: at least 1,
// since 0 turns a bound off, unless d is 0.
func serverMillis(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// pastDeadline is err, saying so when ctx's deadline ended it: ctx ended,
// or the server cancelled a statement at the bound that the deadline set
// (see boundServerTx).
func pastDeadline(ctx context.Context, byDeadline bool, err error) error {
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if code, _ := sqlState(err); ctx.Err() != nil || (byDeadline && code == queryCanceled) {
		return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return err
}
