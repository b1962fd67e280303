package lite

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reclaimed is a job ReclaimOrphaned took from a worker whose heartbeat
// lapsed.
type Reclaimed struct {
	JobID int64
	// Generation is the job's new generation; the lapsed lease had the one
	// before it.
	Generation int64
	// State is available, or dead when the job's attempts were spent.
	State State
}

// reclaimSQL looks only at the heartbeat: a job that runs long but keeps
// renewing is never taken, one whose renewals stopped is. The lapsed
// attempt counts and is recorded with the worker that held it; run_at
// stays, so the job keeps its place in line.
const reclaimSQL = `update lite_jobs
set state = case when attempts >= max_attempts then 'dead' else 'available' end,
    finished_at = case when attempts >= max_attempts then ?1 end,
    generation = generation + 1,
    errors = json_insert(errors, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?1,
        'error', 'heartbeat lapsed: no renewal from ' || coalesce(locked_by, 'unknown worker') ||
                 ' for ' || (?1 - heartbeat_at) || ' ms')),
    lease_token = null, locked_by = null, leased_at = null, heartbeat_at = null
where state = 'running' and heartbeat_at < ?2
returning id, generation, state`

// ReclaimOrphaned (recoverStale) takes back every running job whose last
// heartbeat is older than staleAfter: it goes back to available, or to
// dead when its attempts are spent, under a new generation, so the lapsed
// worker's ack is a no-op.
func (q *Queue) ReclaimOrphaned(ctx context.Context, staleAfter time.Duration) ([]Reclaimed, error) {
	if staleAfter <= 0 {
		return nil, fmt.Errorf("reclaim: staleAfter must be positive, got %s", staleAfter)
	}
	now := q.nowMillis()
	rows, err := q.writer().QueryContext(ctx, reclaimSQL, now, now-staleAfter.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	var out []Reclaimed
	for rows.Next() {
		var r Reclaimed
		if err := rows.Scan(&r.JobID, &r.Generation, &r.State); err != nil {
			rows.Close()
			return nil, fmt.Errorf("reclaim: %w", err)
		}
		out = append(out, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("reclaim: %w", err)
	}
	if len(out) > 0 {
		q.notify()
	}
	return out, nil
}
