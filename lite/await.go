package lite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// MaxAwaited bounds the jobs one Await waits for.
const MaxAwaited = 1000

// Await returns the outcomes of jobs ids (their states and results, in
// the order of ids) once every one of them has ended: done, dead or
// cancelled. Until then it returns a *ParkError the handler returns, as
// Sleep's: the job is blocked, holding no slot, and available again when
// the last of them ends, through the edges a dependency uses (`lite show`
// lists them as jobs it waits for). The run that comes back gets here
// again and gets the outcomes, which are recorded with the job's steps:
// every later attempt gets the same ones. A run's awaits are told apart
// by their order, as its sleeps are.
//
// The jobs awaited are any jobs; a handler's own children are enqueued
// in a step, so that a later attempt finds them instead of enqueueing
// them again:
//
//	ids, err := lite.RunStepTx(ctx, "children", func(ctx context.Context, tx *sql.Tx) ([]int64, error) {
//		...q.EnqueueTx(ctx, tx, child)...
//	})
//	outcomes, err := lite.Await(ctx, ids...)
//
// A job awaited ends its own way: its end, whatever it is, counts, and
// none cancels the job that awaits it (read the outcomes; ResultOf
// decodes a done one's result). Cancelling the awaiting job leaves the
// jobs it awaits as they are: cancel them by their ids if they must stop.
// A job a job awaits is not deleted (by delete, purge or retention) until
// the awaiting job has finished. An id that names no job, or the
// awaiting job itself, is an error.
func Await(ctx context.Context, ids ...int64) ([]Dependency, error) {
	d, err := durableOf(ctx)
	if err != nil {
		return nil, fmt.Errorf("await: %w", err)
	}
	outcomes, err := d.awaitJobs(ctx, d.next("await"), ids)
	if err != nil {
		return nil, fmt.Errorf("await: %w", err)
	}
	return outcomes, nil
}

// ResultOf decodes the result of done job d (a job awaited, or a
// dependency) as JSON into T; a job not done is an error that says how
// it ended.
func ResultOf[T any](d Dependency) (T, error) {
	var v T
	if d.State != StateDone {
		return v, fmt.Errorf("job %d is %s: %w", d.ID, d.State, ErrInvalidState)
	}
	if err := json.Unmarshal(d.Result, &v); err != nil {
		return v, fmt.Errorf("result of job %d: %w", d.ID, err)
	}
	return v, nil
}

// awaitJobs is Await's, its record named name.
func (d *durable) awaitJobs(ctx context.Context, name string, ids []int64) ([]Dependency, error) {
	jobs, err := awaitable(d.lease.JobID, ids)
	if err != nil {
		return nil, err
	}
	if b, ok, err := d.recorded(ctx, name); err != nil || ok {
		return decodeOutcomes(b, err)
	}
	start := d.q.opts.Now()
	b, ended, err := d.q.recordOutcomes(ctx, d.lease, name, ids)
	if err != nil {
		return nil, d.failed(err)
	}
	if ended {
		d.remember(name, b, start)
	}
	if !ended {
		return nil, &ParkError{Reason: ParkedAwait, Jobs: jobs}
	}
	return decodeOutcomes(b, nil)
}

// awaitable checks ids for an await by job self, and returns them
// without repeats: the jobs its park waits for.
func awaitable(self int64, ids []int64) ([]int64, error) {
	switch {
	case len(ids) == 0:
		return nil, fmt.Errorf("%w: no job to await", ErrInvalid)
	case len(ids) > MaxAwaited: // before any work on them: a list may be of any size
		return nil, fmt.Errorf("%w: %d ids to await (at most %d)", ErrInvalid, len(ids), MaxAwaited)
	}
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if id == self {
			return nil, fmt.Errorf("%w: job %d cannot await itself", ErrInvalid, id)
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

var outcomesSQL = stmt{
	sqlite:   `select id, kind, state, result from lite_jobs where id in (select value from json_each(?))`,
	postgres: `select id, kind, state, result from lite_jobs where id in (select jsonb_array_elements_text($1::jsonb)::bigint)`,
}

// recordOutcomes reads the outcomes of jobs ids and, once all of them
// have ended, records them as the step name under lease l, in one
// transaction, one for each id given (a repeated one repeated, so that
// the i-th outcome is ids[i]'s); ended is false, and nothing written,
// while one has not.
func (q *Queue) recordOutcomes(ctx context.Context, l Lease, name string, ids []int64) (record []byte, ended bool, err error) {
	text, _ := json.Marshal(ids) // ids always marshal
	err = q.writeTx(ctx, q.sql(outcomesSQL), func(tx txConn) error {
		rows, err := tx.QueryContext(ctx, q.sql(outcomesSQL), string(text))
		if err != nil {
			return err
		}
		defer rows.Close()
		byID := make(map[int64]Dependency, len(ids))
		for rows.Next() {
			var o Dependency
			if err := rows.Scan(&o.ID, &o.Kind, &o.State, &o.Result); err != nil {
				return err
			}
			byID[o.ID] = o
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		outcomes := make([]Dependency, len(ids))
		for i, id := range ids {
			o, ok := byID[id]
			switch {
			case !ok:
				return fmt.Errorf("job %d: %w", id, ErrNotFound)
			case !o.State.Finished():
				return q.stillOwned(ctx, tx, l) // nothing to record yet
			}
			outcomes[i] = o
		}
		b, err := json.Marshal(outcomes)
		if err != nil {
			return err
		}
		record, _, err = q.recordStepOn(ctx, tx, l, name, b)
		ended = err == nil
		return err
	})
	if err != nil {
		return nil, false, q.explainLoss(ctx, classify(err), l)
	}
	return record, ended, nil
}

func decodeOutcomes(b []byte, err error) ([]Dependency, error) {
	if err != nil {
		return nil, err
	}
	var outcomes []Dependency
	if err := json.Unmarshal(b, &outcomes); err != nil {
		return nil, fmt.Errorf("its record does not decode: %w", err)
	}
	return outcomes, nil
}

// insertAwaitsSQL stores the edges of an await: resolved for a job that
// has ended already. An edge the job has to it already (a dependency of
// its workflow, or an earlier await) is opened or settled again as the
// job awaited stands, and keeps its kind.
var insertAwaitsSQL = stmt{
	sqlite: `insert into lite_deps (depends_on, job_id, resolved, awaits)
select value ->> 0, ?2, value ->> 1, 1 from json_each(?1) where true
on conflict (depends_on, job_id) do update set resolved = excluded.resolved`,
	postgres: `insert into lite_deps (depends_on, job_id, resolved, awaits)
select (e ->> 0)::bigint, $2, (e ->> 1)::bigint, true from jsonb_array_elements($1::jsonb) as e
on conflict (depends_on, job_id) do update set resolved = excluded.resolved`,
}

// parkAwaitingSQL gives a lease back as park does, the job blocked while
// pending (the first parameter) is not 0.
var parkAwaitingSQL = stmt{
	sqlite: `update lite_jobs set state = case when ?1 > 0 then 'blocked' else 'available' end, ` + releasedLease + `,
    run_at = ?2, deps_pending = ?1, parked = case when ?1 > 0 then 'children' end, parked_on = null
where id = ?3 and generation = ?4 and state = 'running'`,
	postgres: `update lite_jobs set state = case when $1 > 0 then 'blocked' else 'available' end, ` + releasedLease + `,
    run_at = $2, deps_pending = $1, parked = case when $1 > 0 then 'children' end, parked_on = null
where id = $3 and generation = $4 and state = 'running'`,
}

// parkAwaiting parks the leased job until jobs ids have ended: blocked
// behind an await edge to each, counted down by their ends' trigger. It
// locks them first, as an enqueue that waits for jobs does (see
// lockDepsSQL), so that an end under way either commits before the edges
// are read, or waits for them and counts on them. It returns the zero
// time when the job is blocked; when every one has ended already (since
// Await looked), the job is available at once.
func (q *Queue) parkAwaiting(ctx context.Context, l Lease, ids []int64) (time.Time, error) {
	var runAt time.Time
	var blocked bool
	err := q.writeTx(ctx, q.sql(parkAwaitingSQL), func(tx txConn) error {
		states, err := q.depStates(ctx, tx, ids)
		if err != nil {
			return err
		}
		edges := make([][2]int64, 0, len(ids))
		pending := 0
		for _, id := range ids {
			st, ok := states[id]
			if !ok {
				continue // gone since Await looked: the run that comes back says so
			}
			resolved := int64(1)
			if !st.Finished() {
				pending, resolved = pending+1, 0
			}
			edges = append(edges, [2]int64{id, resolved})
		}
		text, _ := json.Marshal(edges) // pairs of ints always marshal
		if _, err := tx.ExecContext(ctx, q.sql(insertAwaitsSQL), string(text), l.JobID); err != nil {
			return err
		}
		runAt = q.nowOn(tx)
		res, err := tx.ExecContext(ctx, q.sql(parkAwaitingSQL), pending, runAt.UnixMilli(), l.JobID, l.Generation)
		blocked = pending > 0
		return checkOwned(res, err, l)
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("park: %w", q.explainLoss(ctx, classify(err), l))
	}
	if blocked {
		return time.Time{}, nil
	}
	q.notify()
	return runAt, nil
}
