package lite

import (
	"context"
	"database/sql"
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

// reclaimSQL takes a running job whose owner stopped beating, judged by
// the owner's own promise (stale_after_ms, stored when it leased; a lease
// taken by a lite from before the column has none and is held to the 30s
// default), never by a reclaimer's settings. Two beats must have lapsed:
// the job's own heartbeat, and, for a lease a Worker took (worker_id),
// its worker's row in lite_workers, which the worker renews every
// heartbeat in a statement of its own that no transaction over jobs
// locks; a row gone (retired, or dropped as stale) is lapsed. So a job
// whose heartbeat waits behind a lock on its row (a workflow's enqueue,
// an app's transaction) while its worker goes on beating is not taken.
//
// Silence is counted without the waits this process kept (?3, see
// Queue.noteWait): on a file every writer waits for the one lock, the
// worker's row beat too, so a reclaim that ran after a long transaction
// (its own, or another process's it waited for) counts that time out of
// every owner's silence. The reclaimer's own worker's jobs (?4) that it
// no longer holds (a lease whose answer it never got) are judged by their
// heartbeats alone: the row they name is alive, but they have no owner.
// The lapsed attempt counts and is recorded with the worker that held it;
// run_at stays, so the job keeps its place in line.
//
// On PostgreSQL the reclaim locks the rows it takes and skips those that
// another transaction holds, so it never waits behind a row lock.
var reclaimSQL = stmt{
	sqlite: `update lite_jobs
set state = case when attempts >= max_attempts then 'dead' else 'available' end,
    finished_at = case when attempts >= max_attempts then ?1 end,
    generation = generation + 1,
    errors = json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?1,
        'error', 'heartbeat lapsed: no renewal from ' || coalesce(locked_by, 'unknown worker') ||
                 ' for ' || (?1 - heartbeat_at) || ' ms (its owner promised ' || coalesce(stale_after_ms, 30000) || ' ms)')),
    ` + clearedLease + `
where state = 'running' and heartbeat_at + coalesce(stale_after_ms, 30000) < ?1
  and ?1 - heartbeat_at - ` + waitedSince.sqlite("heartbeat_at") + ` > coalesce(stale_after_ms, 30000)
  and (id, generation) not in (select value ->> 0, value ->> 1 from json_each(?2))
  and (worker_id = ?4 or not exists (select 1 from lite_workers w where w.id = lite_jobs.worker_id
      and ?1 - w.seen_at - ` + waitedSince.sqlite("w.seen_at") + ` <= w.stale_after_ms))
returning id, generation, state`,
	postgres: `update lite_jobs
set state = case when attempts >= max_attempts then 'dead' else 'available' end,
    finished_at = case when attempts >= max_attempts then $1::bigint end,
    generation = generation + 1,
    errors = ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $1::bigint,
        'error', 'heartbeat lapsed: no renewal from ' || coalesce(locked_by, 'unknown worker') ||
                 ' for ' || ($1 - heartbeat_at) || ' ms (its owner promised ' || coalesce(stale_after_ms, 30000) || ' ms)'),
    ` + clearedLease + `
where id = any(array(select id from lite_jobs
    where state = 'running' and heartbeat_at + coalesce(stale_after_ms, 30000) < $1
      and $1 - heartbeat_at - ` + waitedSince.postgres("heartbeat_at") + ` > coalesce(stale_after_ms, 30000)
      and (id, generation) not in (select (value ->> 0)::bigint, (value ->> 1)::bigint from jsonb_array_elements($2::jsonb))
      and (worker_id = $4::text or not exists (select 1 from lite_workers w where w.id = lite_jobs.worker_id
          and $1 - w.seen_at - ` + waitedSince.postgres("w.seen_at") + ` <= w.stale_after_ms))
    for update skip locked))
  and state = 'running'
returning id, generation, state`,
}

// waitedSince is how much of the time from since to now (the first
// parameter) the waits of the third parameter (a JSON array of [from,
// to] pairs, disjoint: see Queue.noteWait) cover.
var waitedSince = struct{ sqlite, postgres func(since string) string }{
	sqlite: func(since string) string {
		return `(select coalesce(sum(max(0, min(value ->> 1, ?1) - max(value ->> 0, ` + since + `))), 0) from json_each(?3))`
	},
	postgres: func(since string) string {
		return `(select coalesce(sum(greatest(0, least((value ->> 1)::bigint, $1) - greatest((value ->> 0)::bigint, ` + since + `))), 0)
              from jsonb_array_elements($3::jsonb))`
	},
}

// ReclaimOrphaned (recoverStale) takes back every running job whose last
// heartbeat is older than its lease owner's StaleAfter: it goes back to
// available, or to dead when its attempts are spent, under a new
// generation, so the lapsed worker's ack is a no-op.
func (q *Queue) ReclaimOrphaned(ctx context.Context) ([]Reclaimed, error) {
	return q.reclaim(ctx, nil, "")
}

// reclaim is ReclaimOrphaned, sparing the leases held: a worker's own
// leases, which it knows to be alive whatever their heartbeat says (a
// renewal that waits behind other processes' writes is late, not lost).
// worker is the reclaiming Worker's row, or "": its jobs not held have no
// owner.
func (q *Queue) reclaim(ctx context.Context, held []Lease, worker string) ([]Reclaimed, error) {
	pairs := make([][2]int64, len(held))
	for i, l := range held {
		pairs[i] = [2]int64{l.JobID, l.Generation}
	}
	list, _ := json.Marshal(pairs) // int pairs always marshal
	var out []Reclaimed
	asked := q.nowMillis()
	err := q.write(ctx, q.sql(reclaimSQL), func(c conn) error {
		now := q.nowMillis()
		q.noteWait(asked, now)
		if !q.engine.onServer() && now-asked > shortWait.Milliseconds() {
			// The file's lock was held while this reclaim waited, since
			// a moment it cannot know: the owners' beats that queued
			// behind it may not have landed yet. The next reclaim
			// decides (see docs/fencing.md).
			return nil
		}
		rows, err := c.QueryContext(ctx, q.sql(reclaimSQL), now, string(list), q.waitsJSON(),
			sql.NullString{String: worker, Valid: worker != ""})
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
