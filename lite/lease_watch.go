package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// A worker with runs looks at their leases after every commit it is told
// of, at most once every leaseCheckGap: under load commits come by the
// thousand a second, and each look is a read. On a file a look that
// found nothing lost is made again after leaseCheckGap, then twice as
// long each time up to leaseSettleMax: the WAL is written, and reported,
// before its commit is synced and seen (see waitSettle). A server
// notifies after the commit, so there one look suffices.
const (
	leaseCheckGap  = 20 * time.Millisecond
	leaseSettleMax = 320 * time.Millisecond
)

// lostLeasesSQL returns which of a list of leases, (id, generation)
// pairs, are no longer running under that generation. It only reads, so
// that a worker may ask after any commit without making one.
var lostLeasesSQL = stmt{
	sqlite: `select l.value ->> 0, l.value ->> 1 from json_each(?1) l
where not exists (select 1 from lite_jobs j
  where j.id = l.value ->> 0 and j.generation = l.value ->> 1 and j.state = 'running')`,
	postgres: `select (l.value ->> 0)::bigint, (l.value ->> 1)::bigint from jsonb_array_elements($1::jsonb) l(value)
where not exists (select 1 from lite_jobs j
  where j.id = (l.value ->> 0)::bigint and j.generation = (l.value ->> 1)::bigint and j.state = 'running')`,
}

// lostLeases returns the leases, of those given, that are lost.
func (q *Queue) lostLeases(ctx context.Context, leases []Lease) (map[leaseKey]bool, error) {
	pairs := make([][2]int64, len(leases))
	for i, l := range leases {
		pairs[i] = [2]int64{l.JobID, l.Generation}
	}
	list, _ := json.Marshal(pairs) // int pairs always marshal
	rows, err := q.r.QueryContext(ctx, q.sql(lostLeasesSQL), string(list))
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", classify(err))
	}
	lost := map[leaseKey]bool{}
	for rows.Next() {
		var k leaseKey
		if err := rows.Scan(&k.id, &k.generation); err != nil {
			rows.Close()
			return nil, fmt.Errorf("check leases: %w", classify(err))
		}
		lost[k] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("check leases: %w", classify(err))
	}
	return lost, nil
}

// watchLeases stops the handler of a lease that another process, or this
// one, cancelled, released or reclaimed, at the first commit it is told
// of after that, rather than at the next heartbeat, which stays the
// safety net. It is told of other processes' commits by commits (nil when
// none are reported), which it passes on through the returned channel,
// of this process's acks, cancels and purges at once, and on a server of
// other processes' through the notifications the queue's waiters share.
func (w *Worker) watchLeases(ctx context.Context, commits <-chan struct{}) (relayed <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	woken := make(chan struct{}, 1)
	if commits != nil {
		out := make(chan struct{}, 1)
		relayed = out
		done.Go(func() { fanOut(ctx, commits, out, woken) })
	}
	if w.q.engine.onServer() {
		w.q.joinWatch()
	}
	done.Go(func() { w.leaseChecks(ctx, woken) })
	return relayed, func() {
		cancel()
		done.Wait()
		if w.q.engine.onServer() {
			w.q.leaveWatch()
		}
	}
}

// leaseChecks checks the leases at each wake-up, paced and settled as
// leaseCheckGap says, until ctx ends.
func (w *Worker) leaseChecks(ctx context.Context, woken <-chan struct{}) {
	gap, again := time.NewTimer(leaseCheckGap), time.NewTimer(leaseSettleMax)
	defer gap.Stop()
	defer again.Stop()
	again.Stop()
	settles := !w.q.engine.onServer()
	var settle time.Duration // 0: no look again due
	for {
		// Taken before the look, so that a commit after it wakes the next.
		finished := w.q.finished.wait()
		w.checkLeases(ctx)
		gap.Reset(leaseCheckGap)
		select {
		case <-ctx.Done():
			return
		case <-gap.C:
		}
		if settle > 0 {
			again.Reset(settle)
		}
		select {
		case <-ctx.Done():
			return
		case <-woken:
		case <-finished:
		case <-again.C:
			if settle *= 2; settle > leaseSettleMax {
				settle = 0
			}
			continue
		}
		again.Stop()
		if settles {
			settle = leaseCheckGap
		}
	}
}

// checkLeases stops the handlers whose lease is lost, matched by lease:
// a job released and leased again by this worker is a new run, which a
// look at the old one never stops. A read that fails is left to the next
// commit, or the heartbeat.
func (w *Worker) checkLeases(ctx context.Context) {
	runs := w.activeRuns()
	if len(runs) == 0 {
		return
	}
	lost, err := w.q.lostLeases(ctx, leasesOf(runs))
	if err != nil {
		return
	}
	for _, r := range runs {
		if lost[r.key()] {
			w.stopLost(r, leaseLost(r.job.Lease()))
		}
	}
}
