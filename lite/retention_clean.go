package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// cleanBatch is how many jobs one delete transaction removes: small enough
// that SQLite's write lock, which every other writer of the file waits
// for, is held for milliseconds (see the measurements in docs/retention.md).
const cleanBatch = 200

// vacuumStep is how many free pages one incremental_vacuum gives back to
// the file system, for the same reason: each step is a write transaction.
const vacuumStep = 500

// cleanPace is how many times as long as each of its write transactions
// the cleaner then waits before its next one: it takes at most a fifth of
// the file's write time, whatever the backlog, and the workers writing
// beside it keep the rest.
const cleanPace = 4

// A purge, which someone asked for and waits on, sizes each delete to
// take about purgeTarget (from cleanBatch up to purgeBatchMax rows): a
// fixed 200 rows spent most of a large purge in per-statement overhead
// and in the pauses between statements. It then waits a quarter of each
// statement's time (purgePace), so writers get the lock between
// statements of under purgeTarget each, and the purge runs at about
// four fifths of the raw delete speed.
const (
	purgeTarget   = 75 * time.Millisecond
	purgeBatchMax = 20_000
	purgePace     = 0.25
)

// batchPlan is how a run of deletes sizes and spaces its statements.
type batchPlan struct {
	size  int     // rows the next statement deletes at most
	adapt bool    // resize each statement toward purgeTarget
	pace  float64 // after a statement, wait this many times its time
}

// cleanPlan is the background cleaner's: fixed small batches, paced to a
// fifth of the file's write time.
func cleanPlan() *batchPlan { return &batchPlan{size: cleanBatch, pace: cleanPace} }

// purgePlan is Purge's: batches sized by time, lightly paced.
func purgePlan() *batchPlan { return &batchPlan{size: cleanBatch, adapt: true, pace: purgePace} }

// next resizes the plan after a statement that took took: double under
// half the target, halve over it.
func (p *batchPlan) next(took time.Duration) {
	switch {
	case !p.adapt:
	case took < purgeTarget/2:
		p.size = min(2*p.size, purgeBatchMax)
	case took > purgeTarget:
		p.size = max(p.size/2, cleanBatch)
	}
}

// pace waits factor times took, or until ctx ends.
func pace(ctx context.Context, factor float64, took time.Duration) {
	t := time.NewTimer(time.Duration(factor * float64(took)))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// cleanSQL deletes up to ?3 jobs of one finished state that finished at or
// before ?2, but those an unfinished job waits for (see notAwaited). The
// finished states are repeated literally so that the partial index on
// finished jobs serves the walk by finished_at; on
// PostgreSQL the rows are locked and skipped if locked, so two hosts
// cleaning at once take different batches.
var cleanSQL = stmt{
	sqlite: `delete from lite_jobs where id in (
  select id from lite_jobs
  where state in ('done', 'dead', 'cancelled') and state = ?1 and finished_at <= ?2 and ` + notAwaited + `
  limit ?3)
returning id, batch_id`,
	postgres: `delete from lite_jobs where id = any(array(
  select id from lite_jobs
  where state in ('done', 'dead', 'cancelled') and state = $1 and finished_at <= $2 and ` + notAwaited + `
  limit $3 for update skip locked))
returning id, batch_id`,
}

// pruneDepsSQL deletes the dependency edges of the jobs just deleted (?1,
// a JSON list of ids) whose two jobs are both gone: an edge one job still
// has is kept, and the other job's deletion later prunes it. Ids are
// never reused, so an edge once pruned can never be wanted again.
var pruneDepsSQL = stmt{
	sqlite: `delete from lite_deps where (depends_on, job_id) in (
    select depends_on, job_id from lite_deps where depends_on in (select value from json_each(?1))
    union all
    select depends_on, job_id from lite_deps where job_id in (select value from json_each(?1)))
  and not exists (select 1 from lite_jobs where id = lite_deps.depends_on)
  and not exists (select 1 from lite_jobs where id = lite_deps.job_id)`,
	postgres: `delete from lite_deps where (depends_on, job_id) in (
    select depends_on, job_id from lite_deps where depends_on in (select jsonb_array_elements_text($1::jsonb)::bigint)
    union all
    select depends_on, job_id from lite_deps where job_id in (select jsonb_array_elements_text($1::jsonb)::bigint))
  and not exists (select 1 from lite_jobs where id = lite_deps.depends_on)
  and not exists (select 1 from lite_jobs where id = lite_deps.job_id)`,
}

// pruneBatchesSQL deletes the batches (?1, a JSON list of ids) of the
// jobs just deleted that have no job left. Their callback, once enqueued,
// is a job of its own and stays.
var pruneBatchesSQL = stmt{
	sqlite: `delete from lite_batches where id in (select value from json_each(?1))
  and not exists (select 1 from lite_jobs where batch_id = lite_batches.id)`,
	postgres: `delete from lite_batches where id in (select jsonb_array_elements_text($1::jsonb)::bigint)
  and not exists (select 1 from lite_jobs where batch_id = lite_batches.id)`,
}

// CleanReport is what one Clean did.
type CleanReport struct {
	// Deleted is how many finished jobs were past their retention and
	// deleted.
	Deleted int64
	// LapsedKeys is how many holds of unique keys (NewJob.UniqueFor,
	// UniqueUntil) had lapsed and were deleted, whatever the retention.
	LapsedKeys int64
	// Batches is how many delete transactions it took.
	Batches int
	// LongestBatch is the wall time of the slowest of its write
	// transactions, delete batches and vacuum steps alike: about the
	// longest that another writer of a SQLite file waited for it.
	LongestBatch time.Duration
	// FreedPages is how many pages of the SQLite file went back to the
	// file system (incremental_vacuum); 0 on PostgreSQL, whose server
	// reuses the space itself (autovacuum).
	FreedPages int64
}

// Clean deletes the finished jobs that are past the database's Retention,
// as of Options.Now, in batches of a few hundred, each its own short
// transaction; then, on a SQLite file created with auto_vacuum =
// INCREMENTAL (every file lite creates; see Vacuum for older ones), it
// gives the freed pages back to the file system, in bounded steps too.
// Free pages that a Purge left are given back too. After each transaction
// it waits four times as long as that one took, so it takes at most a
// fifth of the file's write time from the workers beside it. Running
// workers call it about once a minute (WorkerOptions.CleanInterval); call
// it yourself if you turn theirs off. Deletes are idempotent, so processes
// cleaning at once only share the work. If ctx ends while it works, Clean
// stops after the transaction in progress and reports what it did, with
// no error.
func (q *Queue) Clean(ctx context.Context) (CleanReport, error) {
	var rep CleanReport
	r, _, err := q.retention(ctx, q.r)
	if err != nil {
		return rep, fmt.Errorf("clean: %w", err)
	}
	now := q.nowMillis()
	for _, s := range r.states() {
		if s.keep == KeepForever {
			continue
		}
		if err := q.cleanState(ctx, s.state, now-s.keep.Milliseconds(), &rep, cleanPlan()); err != nil {
			return rep, fmt.Errorf("clean %s jobs: %w", s.state, err)
		}
	}
	deleteHolds := func(limit int) (int64, error) {
		res, err := q.writer().ExecContext(ctx, q.sql(cleanHoldsSQL), now, limit)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	if err := q.cleanBatches(ctx, &rep, cleanPlan(), deleteHolds, func(n int64) { rep.LapsedKeys += n }); err != nil {
		return rep, fmt.Errorf("clean lapsed unique keys: %w", err)
	}
	if !q.engine.onServer() && ctx.Err() == nil {
		freed, err := q.vacuumFreePages(ctx, &rep)
		rep.FreedPages = freed
		if err != nil {
			return rep, fmt.Errorf("clean: incremental vacuum: %w", err)
		}
	}
	return rep, nil
}

// cleanState deletes state's jobs that finished at or before cutoff (unix
// milliseconds), a batch at a time as plan sizes them, until a batch
// comes back short.
func (q *Queue) cleanState(ctx context.Context, state State, cutoff int64, rep *CleanReport, plan *batchPlan) error {
	deleted := func(n int64) {
		rep.Deleted += n
		q.finishedSome()
	}
	deleteBatch := func(limit int) (int64, error) {
		return q.deleteJobs(ctx, nil, q.sql(cleanSQL), state, cutoff, limit)
	}
	return q.cleanBatches(ctx, rep, plan, deleteBatch, deleted)
}

// cleanBatches runs del, a delete of up to the plan's size of rows that
// says how many it deleted, a batch at a time until a batch comes back
// short, and hands deleted the count of each batch that deleted any.
func (q *Queue) cleanBatches(ctx context.Context, rep *CleanReport, plan *batchPlan, del func(limit int) (int64, error), deleted func(n int64)) error {
	for ctx.Err() == nil {
		start := time.Now()
		size := plan.size
		n, err := del(size)
		if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil // stopped before the statement began
		}
		if err != nil {
			return classify(err)
		}
		took := time.Since(start)
		rep.LongestBatch = max(rep.LongestBatch, took)
		if q.afterBatch != nil {
			q.afterBatch()
		}
		pace(ctx, plan.pace, took)
		if n > 0 {
			rep.Batches++
			deleted(n)
		}
		if n < int64(size) {
			return nil
		}
		plan.next(took)
	}
	return nil
}

// deleteJobs runs query, a delete of jobs returning each one's id and
// batch, then prunes the dependency edges and the batches that the
// deleted jobs leave without any job (see pruneDepsSQL), and returns how
// many jobs it deleted. ends, if not nil, runs first, in the delete's
// transaction. The prunes commit after the delete, each on its own: of two processes deleting the two jobs of an edge at once, the
// one whose prune runs last sees both deletes committed and prunes it.
// They run to their end even if ctx ends meanwhile, so that nothing the
// delete left is skipped.
func (q *Queue) deleteJobs(ctx context.Context, ends func(c conn) error, query string, args ...any) (int64, error) {
	var ids, batches []int64
	del := func(c conn) (err error) {
		if ends != nil {
			if err := ends(c); err != nil {
				return err
			}
		}
		ids, batches, err = deleteRows(ctx, c, query, args...)
		return err
	}
	var err error
	if ends == nil {
		err = del(q.writer())
	} else {
		err = q.writeTx(ctx, query, func(tx txConn) error { return del(tx) })
	}
	if err != nil {
		return 0, err
	}
	ctx = context.WithoutCancel(ctx)
	for _, prune := range []struct {
		s   stmt
		ids []int64
	}{{pruneDepsSQL, ids}, {pruneBatchesSQL, batches}} {
		if len(prune.ids) == 0 {
			continue
		}
		list, _ := json.Marshal(prune.ids) // []int64 always marshals
		if _, err := q.writer().ExecContext(ctx, q.sql(prune.s), string(list)); err != nil {
			return int64(len(ids)), fmt.Errorf("prune: %w", err)
		}
	}
	return int64(len(ids)), nil
}

// deleteRows runs query, a delete of jobs returning each one's id and
// batch, on c, and returns the ids and the batches.
func deleteRows(ctx context.Context, c conn, query string, args ...any) (ids, batches []int64, err error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var id int64
		var batch sql.NullInt64
		if err := rows.Scan(&id, &batch); err != nil {
			rows.Close()
			return nil, nil, err
		}
		ids = append(ids, id)
		if batch.Valid && !slices.Contains(batches, batch.Int64) {
			batches = append(batches, batch.Int64)
		}
	}
	if err := rows.Close(); err != nil {
		return nil, nil, err
	}
	return ids, batches, rows.Err()
}

// vacuumFreePages gives the file's free pages back, vacuumStep at a time,
// if the file is in incremental auto-vacuum mode; a file in mode NONE keeps
// them for its own reuse until `lite vacuum` converts it. Each step counts
// towards rep.LongestBatch.
func (q *Queue) vacuumFreePages(ctx context.Context, rep *CleanReport) (int64, error) {
	// An ended ctx stops the loop between steps, never a statement half-way,
	// so that a stopped Clean reports no error.
	stopped := ctx
	ctx = context.WithoutCancel(ctx)
	var mode int
	if err := q.w.QueryRowContext(ctx, "pragma auto_vacuum").Scan(&mode); err != nil {
		return 0, classify(err)
	}
	if mode != autoVacuumIncremental {
		return 0, nil
	}
	var freed int64
	for stopped.Err() == nil {
		before, err := q.freePages(ctx)
		if err != nil || before == 0 {
			return freed, err
		}
		start := time.Now()
		if _, err := q.w.ExecContext(ctx, fmt.Sprintf("pragma incremental_vacuum(%d)", vacuumStep)); err != nil {
			return freed, classify(err)
		}
		took := time.Since(start)
		rep.LongestBatch = max(rep.LongestBatch, took)
		pace(stopped, cleanPace, took)
		after, err := q.freePages(ctx)
		if err != nil {
			return freed, err
		}
		if after >= before {
			return freed, nil // another process's writes took the pages first
		}
		freed += before - after
	}
	return freed, nil
}

// autoVacuumIncremental is PRAGMA auto_vacuum's number for INCREMENTAL.
const autoVacuumIncremental = 2

func (q *Queue) freePages(ctx context.Context) (int64, error) {
	var n int64
	if err := q.w.QueryRowContext(ctx, "pragma freelist_count").Scan(&n); err != nil {
		return 0, classify(err)
	}
	return n, nil
}
