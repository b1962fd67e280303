package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// finishedChannel is the channel a server queue's processes notify, after
// they commit, when a job finished or was deleted: waiters in other
// processes listen on it.
const finishedChannel = "lite_finished"

// Waiters look again on their own this often when commits are reported
// to them (a safety net), or when no watch could start. Tests change them.
var (
	waitSafetyPoll = walSafetyPoll
	waitPoll       = 100 * time.Millisecond
)

// A waiter woken by a commit that it found had finished nothing looks
// again after waitSettle, then after twice as long each time, up to
// waitSettleMax: the WAL is written before the commit is synced and
// published, so a read at once may not see it yet (measured with FULL: a
// wait from another queue on the file took 27 ms at p50 and 1 s at p99
// when it looked once more after 20 ms, and then only at the poll). A
// wait settles so as it begins too. Tests change waitSettle (0: no
// settling).
var waitSettle = time.Millisecond

const waitSettleMax = 512 * time.Millisecond

// Wait returns the job with id once it is finished: done, dead or
// cancelled. A failed attempt that will be retried is no end: Wait goes on
// through the retries. A job already finished returns at once.
//
// Wait sleeps until a commit may have finished the job: at once for this
// process's own acks, cancels and purges; through the WAL watch (SQLite)
// or the server's notifications (PostgreSQL) for other processes'; it
// looks on its own only once a second, as a safety net. Waiters of one
// queue share one watch.
//
// A job that no longer exists, because it never did or because it was
// purged or cleaned by retention before Wait saw it finish, gives
// ErrNotFound at once. Ending ctx ends the wait, and only the wait: the
// job goes on.
func (q *Queue) Wait(ctx context.Context, id int64) (*Job, error) {
	jobs, err := q.waitFor(ctx, []int64{id}, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	return jobs[id], nil
}

// WaitAll waits, as Wait does, until every job in ids is finished, and
// returns them in the order of ids. It fails as soon as any of them is
// found missing.
func (q *Queue) WaitAll(ctx context.Context, ids []int64) ([]*Job, error) {
	unique := distinct(ids)
	jobs, err := q.waitFor(ctx, unique, len(unique), nil)
	if err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	out := make([]*Job, len(ids))
	for i, id := range ids {
		out[i] = jobs[id]
	}
	return out, nil
}

// WaitAny waits, as Wait does, until one of the jobs in ids is finished,
// and returns it: the first in ids' order among those found finished
// together.
func (q *Queue) WaitAny(ctx context.Context, ids []int64) (*Job, error) {
	unique := distinct(ids)
	if len(unique) == 0 {
		return nil, errors.New("wait: no ids")
	}
	jobs, err := q.waitFor(ctx, unique, 1, nil)
	if err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	for _, id := range unique {
		if j, ok := jobs[id]; ok {
			return j, nil
		}
	}
	panic("unreachable: waitFor returned no finished job")
}

// ErrDead and ErrCancelled are what WaitResult returns for a job that
// ended without a result.
var (
	ErrDead      = errors.New("job dead")
	ErrCancelled = errors.New("job cancelled")
)

// WaitResult waits for the job with id, as Wait does, and decodes its
// result, which the handler set as JSON (SetResult with the JSON of a T),
// into a T. A job that ended dead gives ErrDead, naming its last error;
// a cancelled one ErrCancelled.
func WaitResult[T any](ctx context.Context, q *Queue, id int64) (T, error) {
	var result T
	j, err := q.Wait(ctx, id)
	if err != nil {
		return result, err
	}
	if err := j.Err(); err != nil {
		return result, err
	}
	if err := json.Unmarshal(j.Result, &result); err != nil {
		return result, fmt.Errorf("job %d: decode result as %T: %w", id, result, err)
	}
	return result, nil
}

// Err is nil for a job that is done or not finished; for a dead job it
// wraps ErrDead with its last error, and for a cancelled one ErrCancelled.
func (j *Job) Err() error {
	switch j.State {
	case StateDead:
		last := "no error recorded"
		if len(j.Errors) > 0 {
			last = j.Errors[len(j.Errors)-1].Error
		}
		return codeError{fmt.Errorf("job %d dead after %d of %d attempts: %s", j.ID, j.Attempts, j.MaxAttempts, last), ErrDead}
	case StateCancelled:
		// An expiry cancels the job with its reason as its last error
		// (see expireSQL); a cancel by hand records none.
		if n := len(j.Errors); n > 0 && strings.HasPrefix(j.Errors[n-1].Error, "expired: ") {
			return codeError{fmt.Errorf("job %d %s", j.ID, j.Errors[n-1].Error), ErrCancelled}
		}
		return codeError{fmt.Errorf("job %d cancelled", j.ID), ErrCancelled}
	}
	return nil
}

// waitFor waits until need of ids (distinct) are finished, and returns
// every one it found finished by then. look, if not nil, runs before each
// read of the states: WaitProgress's look at the job's progress.
func (q *Queue) waitFor(ctx context.Context, ids []int64, need int, look func(context.Context)) (map[int64]*Job, error) {
	watched := q.joinWatch()
	defer q.leaveWatch()
	poll := waitPoll
	if watched {
		poll = waitSafetyPoll
	}
	timer := time.NewTimer(poll)
	defer timer.Stop()
	finished := map[int64]*Job{}
	// A commit written before the watch began, and synced after the first
	// read, is reported to no one: settle as after a wake.
	pending, settle := ids, waitSettle
	for {
		// Taken before the read, so that a commit after it wakes this wait.
		wake := q.finished.wait()
		if look != nil {
			look(ctx)
		}
		var err error
		if pending, err = q.collectFinished(ctx, pending, finished); err != nil {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx) // the read was cut short by it
			}
			return nil, err
		}
		if len(finished) >= need {
			return finished, nil
		}
		if settle > 0 {
			timer.Reset(settle)
		} else {
			timer.Reset(poll)
		}
		select {
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		case <-timer.C:
			if settle *= 2; settle > waitSettleMax {
				settle = 0
			}
		case <-wake:
			settle = waitSettle
		}
	}
}

var jobStatesSQL = stmt{
	sqlite:   `select id, state from lite_jobs where id in (select value from json_each(?))`,
	postgres: `select id, state from lite_jobs where id in (select jsonb_array_elements_text($1::jsonb)::bigint)`,
}

// collectFinished reads the states of pending, moves the jobs that are
// finished into finished, read whole, and returns those still pending. A
// job missing is ErrNotFound.
func (q *Queue) collectFinished(ctx context.Context, pending []int64, finished map[int64]*Job) ([]int64, error) {
	list, _ := json.Marshal(pending) // ints always marshal
	rows, err := q.r.QueryContext(ctx, q.sql(jobStatesSQL), string(list))
	if err != nil {
		return nil, classify(err)
	}
	states := make(map[int64]State, len(pending))
	for rows.Next() {
		var id int64
		var s State
		if err := rows.Scan(&id, &s); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		states[id] = s
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, classify(err)
	}
	var still []int64
	for _, id := range pending {
		s, ok := states[id]
		switch {
		case !ok:
			return nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
		case !s.Finished():
			still = append(still, id)
			continue
		}
		// Read apart from its state: it may have been purged, or retried,
		// in between.
		j, err := q.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil, fmt.Errorf("job %d: %w", id, ErrNotFound)
		case err != nil:
			return nil, err
		case j.State.Finished():
			finished[id] = j
		default:
			still = append(still, id)
		}
	}
	return still, nil
}

func distinct(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// waitWatch is the one watch of other processes' commits that a queue's
// waiters share: the first waiter starts it, the last one stops it, and
// every commit it reports wakes every waiter.
type waitWatch struct {
	mu      sync.Mutex
	waiters int
	stop    func()       // nil while no watch runs
	reports atomic.Int64 // commits relayed, for tests
}

// joinWatch counts a waiter in, starting the watch for the first, and
// reports whether commits are watched; if not, waiters poll.
func (q *Queue) joinWatch() bool {
	ww := &q.waiters
	ww.mu.Lock()
	defer ww.mu.Unlock()
	ww.waiters++
	if ww.waiters == 1 {
		ww.stop = q.startWatch()
	}
	return ww.stop != nil
}

func (q *Queue) leaveWatch() {
	ww := &q.waiters
	ww.mu.Lock()
	defer ww.mu.Unlock()
	ww.waiters--
	if ww.waiters == 0 && ww.stop != nil {
		ww.stop()
		ww.stop = nil
	}
}

// startWatch relays each commit reported to q.finished; nil if no watch
// can start.
func (q *Queue) startWatch() (stop func()) {
	commits, stopWatch, err := q.watchChannel(finishedChannel)
	if err != nil {
		return nil
	}
	done := make(chan struct{})
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		for {
			select {
			case <-commits:
				q.waiters.reports.Add(1)
				q.finished.wake()
			case <-done:
				return
			}
		}
	}()
	return func() {
		close(done)
		<-relayed
		stopWatch()
	}
}

// finishedSome tells waiters, after a commit, that jobs may have finished,
// been deleted or reported progress: this process's at once; a server's
// other processes through a notification (a file's see the WAL written).
// A heartbeat that carries no report commits nothing it must tell.
func (q *Queue) finishedSome() {
	q.finished.wake()
	if q.engine != enginePostgres {
		return
	}
	// One notification on its way covers every commit made before it
	// leaves: a burst of acks sends few.
	if q.noting.Swap(true) {
		return
	}
	q.notes.Add(1)
	go func() {
		defer q.notes.Done()
		q.noting.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
		defer cancel()
		// Lost, it costs a waiter elsewhere its safety poll, no more.
		_, _ = q.w.ExecContext(ctx, `select pg_notify($1, '')`, finishedChannel)
	}()
}
