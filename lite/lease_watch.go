package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// leaseCheckGap is the least time between two checks of a worker's
// leases: under load commits come by the thousand a second, and a lost
// lease is noticed soon enough at this pace.
const leaseCheckGap = 20 * time.Millisecond

// lostLeasesSQL finds which of a list of leases (id, generation pairs)
// are no longer current. It only reads, so that a worker may ask at every
// commit without making one.
var lostLeasesSQL = stmt{
	sqlite: `select l.value ->> 0, l.value ->> 1 from json_each(?) as l
where not exists (select 1 from lite_jobs j
  where j.id = l.value ->> 0 and j.generation = l.value ->> 1 and j.state = 'running')`,
	postgres: `select (l.value ->> 0)::bigint, (l.value ->> 1)::bigint from jsonb_array_elements($1::jsonb) as l(value)
where not exists (select 1 from lite_jobs j
  where j.id = (l.value ->> 0)::bigint and j.generation = (l.value ->> 1)::bigint and j.state = 'running')`,
}

// lostLeases returns the leases, of those given, that are no longer
// current.
func (q *Queue) lostLeases(ctx context.Context, leases []Lease) (map[[2]int64]bool, error) {
	pairs := make([][2]int64, len(leases))
	for i, l := range leases {
		pairs[i] = [2]int64{l.JobID, l.Generation}
	}
	list, _ := json.Marshal(pairs) // int pairs always marshal
	rows, err := q.r.QueryContext(ctx, q.sql(lostLeasesSQL), string(list))
	if err != nil {
		return nil, fmt.Errorf("check leases: %w", classify(err))
	}
	lost := map[[2]int64]bool{}
	for rows.Next() {
		var pair [2]int64
		if err := rows.Scan(&pair[0], &pair[1]); err != nil {
			rows.Close()
			return nil, fmt.Errorf("check leases: %w", classify(err))
		}
		lost[pair] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("check leases: %w", classify(err))
	}
	return lost, nil
}

// watchLeases stops the handler of a lease another process (or this one)
// took, cancelled or released, at the first commit after it, as reported
// by the watch the queue's waiters share, instead of at the next
// heartbeat, which stays the safety net.
func (w *Worker) watchLeases(ctx context.Context) (stop func()) {
	w.q.joinWatch()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.q.leaveWatch()
		// No poll: the heartbeat is the safety net.
		s := w.q.sleeper(time.Duration(math.MaxInt64))
		defer s.stop()
		gap := time.NewTimer(leaseCheckGap)
		defer gap.Stop()
		for {
			s.arm()
			w.checkLeases(ctx)
			gap.Reset(leaseCheckGap)
			select {
			case <-ctx.Done():
				return
			case <-gap.C:
			}
			if !s.sleep(ctx) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// checkLeases stops the handlers whose lease is lost. A failed read is
// left to the next commit, or the heartbeat.
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
		if l := r.job.Lease(); lost[[2]int64{l.JobID, l.Generation}] {
			w.stopLost(r, leaseLost(l))
		}
	}
}
