package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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

// reclaimSQL looks only at the heartbeat, against the lease owner's own
// promise (stale_after_ms, stored when it leased; a lease taken by a lite
// from before the column has none and is held to the 30s default): a job
// that runs long but keeps renewing is never taken, one whose renewals
// stopped is, and a reclaimer's own settings play no part. The lapsed attempt counts and is
// recorded with the worker that held it; run_at stays, so the job keeps
// its place in line. The time this process's latest write waited (?3 to
// ?4, see Queue.noteWait) is not counted in a job's silence: a heartbeat
// waited as long, and a reclaim that waited behind an app's long
// transaction would otherwise take every job whose worker was waiting
// too, and run it twice.
var reclaimSQL = stmt{
	sqlite: `update lite_jobs
set state = case when attempts >= max_attempts then 'dead' else 'available' end,
    finished_at = case when attempts >= max_attempts then ?1 end,
    generation = generation + 1,
    errors = json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?1,
        'error', 'heartbeat lapsed: no renewal from ' || coalesce(locked_by, 'unknown worker') ||
                 ' for ' || (?1 - heartbeat_at) || ' ms (its owner promised ' || coalesce(stale_after_ms, 30000) || ' ms)')),
    lease_token = null, locked_by = null, leased_at = null, heartbeat_at = null, stale_after_ms = null
where state = 'running' and heartbeat_at + coalesce(stale_after_ms, 30000) < ?1
  and ?1 - heartbeat_at - max(0, min(?4, ?1) - max(?3, heartbeat_at)) > coalesce(stale_after_ms, 30000)
  and (id, generation) not in (select value ->> 0, value ->> 1 from json_each(?2))
returning id, generation, state`,
	postgres: `update lite_jobs
set state = case when attempts >= max_attempts then 'dead' else 'available' end,
    finished_at = case when attempts >= max_attempts then $1::bigint end,
    generation = generation + 1,
    errors = ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $1::bigint,
        'error', 'heartbeat lapsed: no renewal from ' || coalesce(locked_by, 'unknown worker') ||
                 ' for ' || ($1 - heartbeat_at) || ' ms (its owner promised ' || coalesce(stale_after_ms, 30000) || ' ms)'),
    lease_token = null, locked_by = null, leased_at = null, heartbeat_at = null, stale_after_ms = null
where state = 'running' and heartbeat_at + coalesce(stale_after_ms, 30000) < $1
  and $1 - heartbeat_at - greatest(0, least($4::bigint, $1) - greatest($3::bigint, heartbeat_at)) > coalesce(stale_after_ms, 30000)
  and (id, generation) not in (select (value ->> 0)::bigint, (value ->> 1)::bigint from jsonb_array_elements($2::jsonb))
returning id, generation, state`,
}

// ReclaimOrphaned (recoverStale) takes back every running job whose last
// heartbeat is older than its lease owner's StaleAfter: it goes back to
// available, or to dead when its attempts are spent, under a new
// generation, so the lapsed worker's ack is a no-op.
func (q *Queue) ReclaimOrphaned(ctx context.Context) ([]Reclaimed, error) {
	return q.reclaim(ctx, nil)
}

// reclaim is ReclaimOrphaned, sparing the leases held: a worker's own
// leases, which it knows to be alive whatever their heartbeat says (a
// renewal that waits behind other processes' writes is late, not lost).
func (q *Queue) reclaim(ctx context.Context, held []Lease) ([]Reclaimed, error) {
	pairs := make([][2]int64, len(held))
	for i, l := range held {
		pairs[i] = [2]int64{l.JobID, l.Generation}
	}
	list, _ := json.Marshal(pairs) // int pairs always marshal
	var out []Reclaimed
	err := q.write(ctx, q.sql(reclaimSQL), func(c conn) error {
		from, to := q.lastWait()
		rows, err := c.QueryContext(ctx, q.sql(reclaimSQL), q.nowMillis(), string(list), from, to)
		if err != nil {
			return err
		}
		for rows.Next() {
			var r Reclaimed
			if err := rows.Scan(&r.JobID, &r.Generation, &r.State); err != nil {
				rows.Close()
				return err
			}
			out = append(out, r)
		}
		return errors.Join(rows.Err(), rows.Close())
	})
	if err != nil {
		return nil, fmt.Errorf("reclaim: %w", classify(err))
	}
	if len(out) > 0 {
		q.notify()
	}
	if slices.ContainsFunc(out, func(r Reclaimed) bool { return r.State == StateDead }) {
		q.finishedSome()
	}
	return out, nil
}
