package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// WorkerInfo is a running worker as it announced itself in the file: any
// process sharing the file can see it. A running Worker's row is also the
// liveness of the leases it takes (see reclaimSQL).
type WorkerInfo struct {
	Identity string `json:"identity"`
	// Queues the worker leases from; empty means every queue.
	Queues []string `json:"queues"`
	// Kinds the worker has handlers for; empty means every kind.
	Kinds     []string  `json:"kinds"`
	StartedAt time.Time `json:"started_at"`
	SeenAt    time.Time `json:"seen_at"`
	// Slots is how many jobs the worker runs at once, its queues' slots
	// together; 0 if it did not say.
	Slots int `json:"slots"`
}

// Unhandled is a group of ready jobs, one queue and one kind, that no
// running worker takes: no live worker serves the queue with a handler for
// the kind (or for every kind). A kind misspelled at enqueue, or a queue
// nobody works, shows up here rather than waiting in silence.
type Unhandled struct {
	Queue string `json:"queue"`
	Kind  string `json:"kind"`
	Count int64  `json:"count"`
	// OldestReady is how long the oldest of them has been due.
	OldestReady time.Duration `json:"-"`
}

// MarshalJSON gives OldestReady in milliseconds, as lite's other JSON does.
func (u Unhandled) MarshalJSON() ([]byte, error) {
	type plain Unhandled
	return json.Marshal(struct {
		plain
		OldestReadyMS int64 `json:"oldest_ready_ms"`
	}{plain(u), u.OldestReady.Milliseconds()})
}

// A worker's row is live while seen_at + stale_after_ms has not passed,
// the same promise its leases make.
var liveWorker = stmt{
	sqlite:   `seen_at + stale_after_ms >= ?1`,
	postgres: `seen_at + stale_after_ms >= $1`,
}

// A starting worker drops the rows of workers that stopped renewing
// theirs (killed, or their machine lost power): each start cleans up after
// the runs before it, so the table stays small.
var (
	announceSQL = stmt{
		sqlite: `insert into lite_workers (id, identity, queues, kinds, started_at, seen_at, stale_after_ms, slots)
values (?2, ?3, ?4, ?5, ?1, ?1, ?6, ?7)`,
		postgres: `insert into lite_workers (id, identity, queues, kinds, started_at, seen_at, stale_after_ms, slots)
values ($2, $3, $4, $5, $1, $1, $6, $7)`,
	}
	dropStaleWorkersSQL = stmt{
		sqlite:   `delete from lite_workers where not (` + liveWorker.sqlite + `)`,
		postgres: `delete from lite_workers where not (` + liveWorker.postgres + `)`,
	}
	seenSQL = stmt{
		sqlite:   `update lite_workers set seen_at = ?1 where id = ?2`,
		postgres: `update lite_workers set seen_at = ` + ranAt("$1") + ` where id = $2`,
	}
	retireSQL = stmt{
		sqlite:   `delete from lite_workers where id = ?1`,
		postgres: `delete from lite_workers where id = $1`,
	}
)

// announcement is one worker run's row in lite_workers.
type announcement struct {
	q                      *Queue
	id, identity           string
	queues, kinds          string // JSON arrays; [] means every one
	slots                  int
	staleAfterMilliseconds int64
}

// newAnnouncement describes a worker run that takes what queues and kinds
// say (nil: every one), slots jobs at once; announce writes it.
func (q *Queue) newAnnouncement(identity string, queues, kinds []string, slots int, staleAfter time.Duration) *announcement {
	return &announcement{q: q, id: uuid.NewString(), identity: identity,
		queues: jsonArray(queues), kinds: jsonArray(kinds), slots: slots, staleAfterMilliseconds: staleAfter.Milliseconds()}
}

func (a *announcement) insert(ctx context.Context, c conn, now int64) error {
	_, err := c.ExecContext(ctx, a.q.sql(announceSQL), now, a.id, a.identity, a.queues, a.kinds, a.staleAfterMilliseconds, a.slots)
	return err
}

// announce records the worker as running, after dropping the rows of
// workers that stopped renewing theirs.
// It is a write as seen is: its wait for the file's lock is one a
// reclaim counts out of silence (see Queue.noteWait), its time read once
// the lock is held.
func (a *announcement) announce(ctx context.Context) error {
	err := a.q.write(ctx, a.q.sql(dropStaleWorkersSQL), func(c conn) error {
		now := a.q.nowOn(c).UnixMilli()
		if _, err := c.ExecContext(ctx, a.q.sql(dropStaleWorkersSQL), now); err != nil {
			return err
		}
		return a.insert(ctx, c, now)
	})
	if err != nil {
		return fmt.Errorf("announce worker: %w", classify(err))
	}
	return nil
}

// seen renews the row, the liveness of the worker's leases (see
// reclaimSQL). A row that is missing (its first write failed, or another
// worker's start deleted it as stale while this one was frozen) is
// written again. It is a write of its own, never a part of one over
// jobs: on a file, its time read once the lock is held; on a server, one
// statement on a row that no transaction over jobs locks.
func (a *announcement) seen(ctx context.Context) error {
	err := a.q.write(ctx, a.q.sql(seenSQL), func(c conn) error {
		now := a.q.nowOn(c).UnixMilli()
		res, err := c.ExecContext(ctx, a.q.sql(seenSQL), now, a.id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		return a.insert(ctx, c, now)
	})
	if err != nil {
		return fmt.Errorf("renew worker announcement: %w", classify(err))
	}
	return nil
}

// retire removes the row of a worker that stopped cleanly.
func (a *announcement) retire(ctx context.Context) error {
	if _, err := a.q.writer().ExecContext(ctx, a.q.sql(retireSQL), a.id); err != nil {
		return fmt.Errorf("retire worker announcement: %w", classify(err))
	}
	return nil
}

// jsonArray is list as a JSON array, [] for none.
func jsonArray(list []string) string {
	if list == nil {
		list = []string{}
	}
	return jsonList(list)
}

var workersSQL = stmt{
	sqlite: `select identity, queues, kinds, started_at, seen_at, slots
from lite_workers where ` + liveWorker.sqlite + ` order by started_at, identity, id`,
	postgres: `select identity, queues, kinds, started_at, seen_at, slots
from lite_workers where ` + liveWorker.postgres + ` order by started_at, identity, id`,
}

// Workers lists the running workers of every process on the file, in the
// order they started.
func (q *Queue) Workers(ctx context.Context) ([]WorkerInfo, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(workersSQL), q.nowMillis())
	if err != nil {
		return nil, fmt.Errorf("list workers: %w", classify(err))
	}
	defer rows.Close()
	var out []WorkerInfo
	for rows.Next() {
		var (
			w               WorkerInfo
			queues, kinds   string
			started, seenAt int64
		)
		if err := rows.Scan(&w.Identity, &queues, &kinds, &started, &seenAt, &w.Slots); err != nil {
			return nil, fmt.Errorf("list workers: %w", classify(err))
		}
		if err := errors.Join(json.Unmarshal([]byte(queues), &w.Queues), json.Unmarshal([]byte(kinds), &w.Kinds)); err != nil {
			return nil, fmt.Errorf("list workers: %w", err)
		}
		w.StartedAt, w.SeenAt = time.UnixMilli(started).UTC(), time.UnixMilli(seenAt).UTC()
		out = append(out, w)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list workers: %w", classify(err))
	}
	return out, nil
}

// unhandledSQL groups the ready jobs first, so the workers are matched
// once per (queue, kind) rather than once per job. Its second parameter
// narrows it to a worker's own queues ('[]': every queue).
var unhandledSQL = stmt{
	sqlite: `with waiting as (
    select queue, kind, count(*) as n, min(run_at) as oldest from lite_jobs
    where state = 'available' and run_at <= ?1
      and (?2 = '[]' or queue in (select value from json_each(?2)))
    group by queue, kind)
select queue, kind, n, oldest from waiting
where not exists (
    select 1 from lite_workers
    where ` + liveWorker.sqlite + `
      and (queues = '[]' or waiting.queue in (select value from json_each(queues)))
      and (kinds = '[]' or waiting.kind in (select value from json_each(kinds))))
order by queue, kind`,
	postgres: `with waiting as (
    select queue, kind, count(*) as n, min(run_at) as oldest from lite_jobs
    where state = 'available' and run_at <= $1
      and ($2::jsonb = '[]' or queue in (select jsonb_array_elements_text($2::jsonb)))
    group by queue, kind)
select queue, kind, n, oldest from waiting
where not exists (
    select 1 from lite_workers
    where ` + liveWorker.postgres + `
      and (queues = '[]' or waiting.queue in (select jsonb_array_elements_text(queues)))
      and (kinds = '[]' or waiting.kind in (select jsonb_array_elements_text(kinds))))
order by queue, kind`,
}

// Unhandled lists the ready jobs that no running worker, in any process on
// the file, would lease, grouped by queue and kind. Jobs not yet due are
// left out: nobody is expected to take them yet.
func (q *Queue) Unhandled(ctx context.Context) ([]Unhandled, error) {
	return q.unhandled(ctx, nil)
}

func (q *Queue) unhandled(ctx context.Context, queues []string) ([]Unhandled, error) {
	now := q.nowMillis()
	rows, err := q.r.QueryContext(ctx, q.sql(unhandledSQL), now, jsonArray(queues))
	if err != nil {
		return nil, fmt.Errorf("find unhandled jobs: %w", classify(err))
	}
	defer rows.Close()
	var out []Unhandled
	for rows.Next() {
		var (
			u      Unhandled
			oldest int64
		)
		if err := rows.Scan(&u.Queue, &u.Kind, &u.Count, &oldest); err != nil {
			return nil, fmt.Errorf("find unhandled jobs: %w", classify(err))
		}
		u.OldestReady = time.Duration(now-oldest) * time.Millisecond
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find unhandled jobs: %w", classify(err))
	}
	return out, nil
}
