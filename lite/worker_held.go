package lite

import (
	"context"
	"fmt"
	"time"
)

// RateHold is a queue whose ready jobs wait for its rate window to open:
// it started its Rate jobs for this Per already.
type RateHold struct {
	Queue   string
	Rate    int
	Per     time.Duration
	OpensAt time.Time // when the next window opens and the queue may start jobs again
}

// rateHeldSQL finds, among the queues and kinds given (null: any), those
// with a job ready now that only a spent rate window keeps from starting:
// lite_flow has an opens_at only for a queue whose current window, at
// now, has no start left.
var rateHeldSQL = stmt{
	sqlite: `with ` + rateHeldFlow.sqlite + `
select f.queue, s.rate, s.rate_per_ms, f.opens_at
from lite_flow f join lite_queues s on s.queue = f.queue
where not f.paused and f.opens_at is not null
  and (?2 is null or f.queue in (select value from json_each(?2)))
  and exists (select 1 from lite_jobs j where j.state = 'available' and j.queue = f.queue and j.run_at <= ?1
      and (?3 is null or j.kind in (select value from json_each(?3))))
order by f.queue`,
	postgres: `with ` + rateHeldFlow.postgres + `
select f.queue, s.rate, s.rate_per_ms, f.opens_at
from lite_flow f join lite_queues s on s.queue = f.queue
where not f.paused and f.opens_at is not null
  and ($2::jsonb is null or f.queue in (select jsonb_array_elements_text($2::jsonb)))
  and exists (select 1 from lite_jobs j where j.state = 'available' and j.queue = f.queue and j.run_at <= $1
      and ($3::jsonb is null or j.kind in (select jsonb_array_elements_text($3::jsonb))))
order by f.queue`,
}

// rateHeldFlow is lite_flow as rateHeldSQL reads it: now is its first
// parameter.
var rateHeldFlow = flowCTE(1)

// RateHeld lists the queues the worker serves whose jobs of its kinds are
// ready now but wait for the queue's rate window to open, in queue order:
// why a RunOnce that leased nothing left ready jobs where they are (see
// package litetest's Drain).
func (w *Worker) RateHeld(ctx context.Context) ([]RateHold, error) {
	rows, err := w.q.r.QueryContext(ctx, w.q.sql(rateHeldSQL), w.q.nowMillis(), nullList(w.servedQueues()), nullList(w.kinds()))
	if err != nil {
		return nil, fmt.Errorf("rate held: %w", classify(err))
	}
	defer rows.Close()
	var out []RateHold
	for rows.Next() {
		var h RateHold
		var per, opens int64
		if err := rows.Scan(&h.Queue, &h.Rate, &per, &opens); err != nil {
			return nil, fmt.Errorf("rate held: %w", classify(err))
		}
		h.Per, h.OpensAt = time.Duration(per)*time.Millisecond, fromMillis(opens)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("rate held: %w", classify(err))
	}
	return out, nil
}

// servedQueues is every queue the worker's lanes lease from, or nil when
// one of them leases from every queue.
func (w *Worker) servedQueues() []string {
	var queues []string
	for _, l := range w.lanes {
		if l.queues == nil {
			return nil
		}
		queues = append(queues, l.queues...)
	}
	return queues
}
