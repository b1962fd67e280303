package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Handler runs one job. Its context ends when the lease is lost (the cause
// is ErrLeaseLost), when its timeout passes, or when the worker shuts down
// (the cause is ErrShutdown). A nil error acks the job done, with the
// result given to SetResult; an error fails the attempt. Wrap the error
// with Permanent to bury the job at once, or return Snooze(d) to run it
// again later without spending an attempt.
type Handler func(ctx context.Context, job *Job) error

// ErrShutdown is the cause of a handler's context when its worker stopped
// before the handler finished. The job is released, not failed. A handler
// that stops on its own schedule at shutdown (as `lite work` does with
// its commands) gives its job back the same way by returning an error
// that wraps ErrShutdown.
var ErrShutdown = errors.New("worker shut down")

// errTimeout is the cause of a handler's context when its timeout passed.
var errTimeout = errors.New("handler timed out")

// outcomeKey holds the *success a handler fills in for its ack.
type outcomeKey struct{}

// success is what a handler asks its done-ack to write. A handler may
// call SetResult and CommitWithAck from any goroutine while it runs.
type success struct {
	mu      sync.Mutex
	result  []byte
	writes  []func(tx *sql.Tx) error
	writing atomic.Bool // its writes are running, in the ack's transaction
}

// doneAck is a success as the handler left it when it returned.
type doneAck struct {
	result  []byte
	writes  []func(tx *sql.Tx) error
	writing *atomic.Bool
}

func (s *success) snapshot() doneAck {
	s.mu.Lock()
	defer s.mu.Unlock()
	return doneAck{result: s.result, writes: slices.Clone(s.writes), writing: &s.writing}
}

// errWriteInsideAck refuses a queue call that writes, made inside a
// handler's CommitWithAck writes: it would wait for the queue's writer,
// which the ack's transaction holds until the writes return.
var errWriteInsideAck = errors.New("a queue call that writes, inside CommitWithAck's writes, would wait forever for the writer the ack's transaction holds: write through the *sql.Tx given (EnqueueTx for a job)")

// insideAckWrites reports whether ctx is a handler's whose CommitWithAck
// writes are running now.
func insideAckWrites(ctx context.Context) bool {
	s, ok := ctx.Value(outcomeKey{}).(*success)
	return ok && s.writing.Load()
}

// runWrites runs a handler's CommitWithAck writes in order, in the ack's
// transaction.
func (d doneAck) runWrites(tx *sql.Tx) error {
	d.writing.Store(true)
	defer d.writing.Store(false)
	for _, write := range d.writes {
		if err := write(tx); err != nil {
			return err
		}
	}
	return nil
}

// SetResult records result as the job's result when the handler returns
// nil. It does nothing outside a handler.
func SetResult(ctx context.Context, result []byte) {
	if s, ok := ctx.Value(outcomeKey{}).(*success); ok {
		s.mu.Lock()
		s.result = result
		s.mu.Unlock()
	}
}

// CommitWithAck makes writes run in the transaction that acks the job
// done, once the handler returns nil: the handler's rows in the queue's
// file commit if and only if its lease is still current (see
// Queue.Complete). A handler may call it more than once: every writes runs,
// in the order given, in the one transaction. If any fails, nothing
// commits and the attempt fails with its error. It combines with
// SetResult. It does nothing outside a handler.
//
// writes must write through the *sql.Tx it is given. The transaction holds
// the file's write lock, so a write through Queue.DB() or another
// connection inside writes waits for it until the busy timeout; the
// attempt then fails with an error that says so. A queue call that writes
// (Enqueue rather than EnqueueTx) made with the handler's context fails
// at once; with another context it would wait forever.
func CommitWithAck(ctx context.Context, writes func(tx *sql.Tx) error) {
	if s, ok := ctx.Value(outcomeKey{}).(*success); ok {
		s.mu.Lock()
		s.writes = append(s.writes, writes)
		s.mu.Unlock()
	}
}

type snoozeError struct{ d time.Duration }

func (s snoozeError) Error() string { return fmt.Sprintf("snoozed for %s", s.d) }

// Snooze is an error a handler returns to run the job again after d,
// without spending an attempt.
func Snooze(d time.Duration) error { return snoozeError{d} }

// panicError is a handler's panic, turned into a failed attempt.
type panicError struct {
	value any
	stack []byte
}

func (p panicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", p.value, p.stack) }

// call runs h and turns a panic into an error carrying the stack.
func call(ctx context.Context, h Handler, job *Job) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicError{value: v, stack: debug.Stack()}
		}
	}()
	return h(ctx, job)
}
