package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Filter picks the jobs a bulk action changes. Empty fields match
// everything; a job must match every field that is set.
type Filter struct {
	// States narrows the action to these of the states it applies to
	// (see BulkAction); naming another is an error.
	States []State
	Queue  string
	Kind   string
	// Before matches jobs that finished before it or, unfinished, were
	// enqueued before it: an age.
	Before time.Time
	// IDs matches these jobs only, as a dashboard's selection on a page.
	IDs []int64
	// Tags matches the jobs that carry every one of these tags, as
	// ListFilter.Tags does.
	Tags []string
}

// BulkAction is what Bulk does to the jobs a Filter matches. Each applies
// to some states only, checked in the statement that changes each batch,
// as the one-job methods check it.
type BulkAction string

const (
	// BulkRetry starts dead and cancelled jobs over, as Retry does. A job
	// whose unique key another job holds is skipped, and of jobs
	// sharing a key only one is started.
	BulkRetry BulkAction = "retry"
	// BulkCancel cancels available and running jobs, as Cancel does: a
	// running job's generation is bumped, so its worker's ack changes
	// nothing.
	BulkCancel BulkAction = "cancel"
	// BulkDelete deletes available and finished jobs. A running job is
	// never deleted (cancel it first): its worker holds a lease on it.
	BulkDelete BulkAction = "delete"
)

// bulkBatch bounds each transaction of a bulk action, so that workers'
// writes wait for one short batch at most, never for the whole action.
const bulkBatch = 1000

// bulkStates are the states each action applies to. They are the guard
// of the statement that finds each batch and of the count; the statement
// that changes a batch repeats them, for the jobs that changed state
// between the two.
var bulkStates = map[BulkAction][]State{
	BulkRetry:  {StateDead, StateCancelled},
	BulkCancel: {StateBlocked, StateAvailable, StateRunning},
	BulkDelete: {StateAvailable, StateDone, StateDead, StateCancelled},
}

// bulkMatch is the filter of the find and count statements: ?1 the
// states (the action's, narrowed by the filter's), ?2 queue, ?3 kind, ?4
// before (0: any age), ?5 ids ([]: any), ?6 tags, every one of which a job
// must carry ([]: any), as listSQL's.
var bulkMatch = stmt{
	sqlite: `state in (select value from json_each(?1))
  and (?2 = '' or queue = ?2) and (?3 = '' or kind = ?3)
  and (?4 = 0 or coalesce(finished_at, created_at) < ?4)
  and (?5 = '[]' or id in (select value from json_each(?5)))
  and (?6 = '[]' or not exists (select 1 from json_each(?6) as want
    where want.value not in (select value from json_each(lite_jobs.tags))))`,
	postgres: `state in (select jsonb_array_elements_text($1::jsonb))
  and ($2 = '' or queue = $2) and ($3 = '' or kind = $3)
  and ($4::bigint = 0 or coalesce(finished_at, created_at) < $4)
  and ($5 = '[]' or id in (select jsonb_array_elements_text($5::jsonb)::bigint))
  and ($6 = '[]' or tags @> $6::text::jsonb)`,
}

// bulkFindSQL is the next batch's ids, from after ?7 up to ?8 (the last
// id when the action began, so jobs enqueued meanwhile are left alone and
// the action ends), at most ?9 of them.
var bulkFindSQL = stmt{
	sqlite:   `select id from lite_jobs where ` + bulkMatch.sqlite + ` and id > ?7 and id <= ?8 order by id limit ?9`,
	postgres: `select id from lite_jobs where ` + bulkMatch.postgres + ` and id > $7 and id <= $8 order by id limit $9`,
}

var bulkCountSQL = stmt{
	sqlite:   `select count(*) from lite_jobs where ` + bulkMatch.sqlite,
	postgres: `select count(*) from lite_jobs where ` + bulkMatch.postgres,
}

// bulkDeleteCountSQL is bulkCountSQL for a delete, which keeps a job an
// unfinished job waits for (see bulkDeleteSQL).
var bulkDeleteCountSQL = stmt{
	sqlite:   bulkCountSQL.sqlite + ` and ` + notAwaited,
	postgres: bulkCountSQL.postgres + ` and ` + notAwaited,
}

var lastIDSQL = stmt{
	sqlite:   `select coalesce(max(id), 0) from lite_jobs`,
	postgres: `select coalesce(max(id), 0) from lite_jobs`,
}

// Bulk applies action to every job f matches, in batches of its own
// short transactions, and returns how many jobs it changed. Jobs enqueued
// after it began are left alone. An error stops it, with the count of
// what earlier batches changed.
func (q *Queue) Bulk(ctx context.Context, action BulkAction, f Filter) (int64, error) {
	args, err := bulkArgs(action, f)
	if err != nil {
		return 0, err
	}
	var last int64
	if err := q.r.QueryRowContext(ctx, q.sql(lastIDSQL)).Scan(&last); err != nil {
		return 0, fmt.Errorf("%s: %w", action, classify(err))
	}
	var total, after int64
	for {
		ids, err := q.bulkFind(ctx, args, after, last)
		if err != nil {
			return total, fmt.Errorf("%s: %w", action, classify(err))
		}
		if len(ids) == 0 {
			break
		}
		// A batch locks its jobs' rows in its own order, while an app's
		// transaction (a step's fn) may hold one of them and want another:
		// one the server ended as a deadlock wrote nothing and runs again.
		var n int64
		err = retryConflicts(ctx, func() (err error) {
			n, err = q.bulkApply(ctx, action, ids)
			return err
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("%s: %w", action, err)
		}
		after = ids[len(ids)-1]
	}
	if total == 0 {
		return 0, nil
	}
	if action == BulkRetry {
		q.notify()
	}
	return total, q.afterWrite(ctx, string(action)) // once: it covers every batch's commit
}

// BulkCount is how many jobs Bulk(ctx, action, f) would change now: a
// dry run. A retry may start fewer, when jobs share a unique key.
func (q *Queue) BulkCount(ctx context.Context, action BulkAction, f Filter) (int64, error) {
	args, err := bulkArgs(action, f)
	if err != nil {
		return 0, err
	}
	count := bulkCountSQL
	if action == BulkDelete {
		count = bulkDeleteCountSQL
	}
	var n int64
	if err := q.r.QueryRowContext(ctx, q.sql(count), args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("%s: count: %w", action, classify(err))
	}
	return n, nil
}

// bulkArgs are bulkMatch's parameters for f, or why f does not fit
// action.
func bulkArgs(action BulkAction, f Filter) ([]any, error) {
	states, ok := bulkStates[action]
	if !ok {
		return nil, fmt.Errorf("bulk: unknown action %q", action)
	}
	if len(f.States) > 0 {
		for _, s := range f.States {
			if !slices.Contains(states, s) {
				return nil, fmt.Errorf("%s: %w: it applies to %s jobs, not %q", action, ErrInvalidState, joinStates(states), s)
			}
		}
		states = f.States
	}
	list := make([]string, len(states))
	for i, s := range states {
		list[i] = string(s)
	}
	var before int64
	if !f.Before.IsZero() {
		before = f.Before.UnixMilli()
	}
	ids, _ := json.Marshal(f.IDs) // []int64 always marshals
	if f.IDs == nil {
		ids = []byte("[]")
	}
	tags, err := encodeTags(f.Tags)
	if err != nil {
		return nil, fmt.Errorf("%s: tags: %w", action, codeError{err, ErrInvalid})
	}
	return []any{jsonList(list), f.Queue, f.Kind, before, string(ids), tags}, nil
}

// bulkFind reads the ids of the next batch after after.
func (q *Queue) bulkFind(ctx context.Context, args []any, after, last int64) ([]int64, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(bulkFindSQL), append(args, after, last, bulkBatch)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// bulkApply changes one batch, in one statement (a retry: in one
// transaction, see retryOn), and returns how many of its jobs changed: a
// job that left the action's states since it was found is left as it is.
func (q *Queue) bulkApply(ctx context.Context, action BulkAction, ids []int64) (int64, error) {
	list, _ := json.Marshal(ids) // []int64 always marshals
	now := q.nowMillis()
	var (
		res sql.Result
		err error
	)
	switch action {
	case BulkRetry:
		err = q.writeTx(ctx, q.sql(bulkRetrySQL), func(tx txConn) error {
			return q.retryOn(ctx, tx, bulkRetryLocksSQL, bulkRetryWaitsSQL, string(list), func() (err error) {
				res, err = tx.ExecContext(ctx, q.sql(bulkRetrySQL), now, string(list))
				return err
			})
		})
	case BulkCancel:
		res, err = q.writer().ExecContext(ctx, q.sql(bulkCancelSQL), now, cancelledText, string(list))
	case BulkDelete:
		n, err := q.deleteJobs(ctx, func(c conn) error {
			if q.engine.onServer() {
				if _, err := c.ExecContext(ctx, q.sql(bulkDeleteLocksSQL), string(list)); err != nil {
					return err
				}
			}
			_, err := c.ExecContext(ctx, q.sql(bulkDeleteEndsSQL), now, cancelledText, string(list))
			return err
		}, q.sql(bulkDeleteSQL), string(list))
		if err != nil {
			return 0, classify(err)
		}
		return n, nil
	}
	if isUniqueViolation(err) {
		return 0, fmt.Errorf("a unique key was taken meanwhile; try again: %w", ErrDuplicate)
	}
	if err != nil {
		return 0, classify(err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, classify(err)
	}
	return n, nil
}

// bulkRetryWaitsSQL is retryWaitsSQL for a batch.
var bulkRetryWaitsSQL = stmt{
	sqlite:   retryWaits(`(select value from json_each(?))`),
	postgres: retryWaits(`(select jsonb_array_elements_text($1::jsonb)::bigint)`),
}

// bulkRetryLocksSQL is retryLocksSQL for a batch.
var bulkRetryLocksSQL = stmt{
	postgres: retryLocks(`(select jsonb_array_elements_text($1::jsonb)::bigint)`),
}

// bulkRetrySQL is retrySQL for a batch. A job whose unique key another
// job holds is skipped (the trigger that takes a retried job's hold back
// would refuse it, and the whole batch with it), and of the batch's jobs
// sharing a key only the first is started.
var bulkRetrySQL = stmt{
	sqlite: `update lite_jobs
set ` + retrySet + `, ` + retryTime("?1") + `
where id in (select value from json_each(?2)) and state in ('dead', 'cancelled')
  and (unique_key is null or (
    not exists (select 1 from lite_unique h where h.queue = lite_jobs.queue and h.unique_key = lite_jobs.unique_key
        and h.job_id <> lite_jobs.id and (h.released = 0 or h.held_until > ?1))
    and id = (select min(d.id) from lite_jobs d where d.id in (select value from json_each(?2))
        and d.queue = lite_jobs.queue and d.unique_key = lite_jobs.unique_key)))`,
	postgres: `update lite_jobs
set ` + retrySet + `, ` + retryTime("$1") + `
where id in (select jsonb_array_elements_text($2::jsonb)::bigint) and state in ('dead', 'cancelled')
  and (unique_key is null or (
    not exists (select 1 from lite_unique h where h.queue = lite_jobs.queue and h.unique_key = lite_jobs.unique_key
        and h.job_id <> lite_jobs.id and (h.released = 0 or h.held_until > $1))
    and id = (select min(d.id) from lite_jobs d where d.id in (select jsonb_array_elements_text($2::jsonb)::bigint)
        and d.queue = lite_jobs.queue and d.unique_key = lite_jobs.unique_key)))`,
}

// bulkCancelSQL is cancelSQL for a batch: a running job's generation is
// bumped and its errors log records the cancel.
var bulkCancelSQL = stmt{
	sqlite: `update lite_jobs
` + cancelSet.sqlite + `
where id in (select value from json_each(?3)) and state in ('blocked', 'available', 'running')`,
	postgres: `update lite_jobs
` + cancelSet.postgres + `
where id in (select jsonb_array_elements_text($3::jsonb)::bigint) and state in ('blocked', 'available', 'running')`,
}

// bulkDeleteSQL deletes a batch, never a running job, nor one an
// unfinished job waits for (see notAwaited), and returns what deleteJobs
// prunes after it. Ids are never reused, so a deleted job's stale lease
// can never match a new one.
var bulkDeleteSQL = stmt{
	sqlite: `delete from lite_jobs
where id in (select value from json_each(?1)) and state in ('available', 'done', 'dead', 'cancelled')
  and ` + notAwaited + `
returning id, batch_id`,
	postgres: `delete from lite_jobs
where id in (select jsonb_array_elements_text($1::jsonb)::bigint) and state in ('available', 'done', 'dead', 'cancelled')
  and ` + notAwaited + `
returning id, batch_id`,
}

// bulkDeleteLocksSQL locks, on PostgreSQL, the rows of a batch to delete
// (in id order, as lockDepsSQL does; a running job's row, which is never
// deleted, stays free for its owner's heartbeat and ack) before bulkDeleteEndsSQL and
// bulkDeleteSQL read whether a job waits for them (notAwaited). A
// statement that waits for a row reads every other row from before its
// wait: one that waited for an enqueue holding the row would miss the
// dependent that enqueue committed, and delete the job it waits for.
var bulkDeleteLocksSQL = stmt{
	postgres: `select id from lite_jobs where id in (select jsonb_array_elements_text($1::jsonb)::bigint)
  and state in ('available', 'done', 'dead', 'cancelled') order by id for update`,
}

// bulkDeleteEndsSQL cancels, as Cancel does, the available jobs of a
// batch (?3) that bulkDeleteSQL then deletes in the same transaction, so
// that a job deleted before it finished ends as a cancelled one does:
// its batch counts it (and calls back if it was the last), its own
// callback fires, its outcome is counted. Without it a batch would wait
// for a job that no longer exists, forever.
var bulkDeleteEndsSQL = stmt{
	sqlite: `update lite_jobs
` + cancelSet.sqlite + `
where id in (select value from json_each(?3)) and state = 'available' and ` + notAwaited,
	postgres: `update lite_jobs
` + cancelSet.postgres + `
where id in (select jsonb_array_elements_text($3::jsonb)::bigint) and state = 'available' and ` + notAwaited,
}

// notAwaited holds for a job whose dependents have all finished (or are
// gone). A job that one still waits for or may yet run after is never
// deleted (by delete, purge or retention): a blocked dependent would wait
// for an end that never comes, and one that runs reads its dependencies'
// results (Dependencies), those of the jobs done long before it too.
// Cancel the dependents first, or let them end.
const notAwaited = `(not lite_jobs.has_dependents or not exists (select 1 from lite_deps w join lite_jobs b on b.id = w.job_id
    where w.depends_on = lite_jobs.id and b.state not in ('done', 'dead', 'cancelled')))`
