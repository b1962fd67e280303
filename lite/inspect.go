package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

var getSQL = stmt{
	sqlite:   `select ` + jobColumns + ` from lite_jobs where id = ?`,
	postgres: `select ` + jobColumns + ` from lite_jobs where id = $1`,
}

// Get reads one job. An unknown id gives ErrNotFound.
func (q *Queue) Get(ctx context.Context, id int64) (*Job, error) {
	j, err := scanJob(q.r.QueryRowContext(ctx, q.sql(getSQL), id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, classify(err))
	}
	return j, nil
}

// ListFilter picks jobs for List. Empty fields match everything.
type ListFilter struct {
	State State
	Queue string
	Kind  string
	// UniqueKey finds the jobs enqueued with this key.
	UniqueKey string
	// AfterID pages: pass the last id of the previous page.
	AfterID int64
	// Limit caps the page. Default 100.
	Limit int
}

var listSQL = stmt{
	sqlite: `select ` + jobColumns + ` from lite_jobs
where (?1 = '' or state = ?1) and (?2 = '' or queue = ?2) and (?3 = '' or kind = ?3) and id > ?4
  and (?6 = '' or unique_key = ?6)
order by id limit ?5`,
	postgres: `select ` + jobColumns + ` from lite_jobs
where ($1 = '' or state = $1) and ($2 = '' or queue = $2) and ($3 = '' or kind = $3) and id > $4
  and ($6 = '' or unique_key = $6)
order by id limit $5`,
}

// List returns jobs matching f in id order, one page at a time.
func (q *Queue) List(ctx context.Context, f ListFilter) ([]*Job, error) {
	if f.State != "" && !f.State.valid() {
		return nil, fmt.Errorf("list: unknown state %q", f.State)
	}
	switch {
	case f.Limit < 0:
		return nil, fmt.Errorf("list: negative limit %d", f.Limit)
	case f.Limit == 0:
		f.Limit = 100
	}
	rows, err := q.r.QueryContext(ctx, q.sql(listSQL), string(f.State), f.Queue, f.Kind, f.AfterID, f.Limit, f.UniqueKey)
	if err != nil {
		return nil, fmt.Errorf("list: %w", classify(err))
	}
	defer rows.Close()
	var jobs []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list: %w", classify(err))
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", classify(err))
	}
	return jobs, nil
}

// QueueStats counts one queue's jobs by state. Its JSON form is the one
// `lite stats --json` prints (see MarshalJSON).
type QueueStats struct {
	Queue string
	// Counts has an entry for each state the queue has jobs in; a state
	// with none reads as zero.
	Counts map[State]int64
	// OldestReady is how long the oldest available job whose run_at has
	// come has been waiting; zero when none waits.
	OldestReady time.Duration
	// Paused says that no job of the queue starts until it is resumed
	// (see Queue.Pause).
	Paused bool
	// Limits are the queue's limits across processes (see
	// Queue.SetLimits); zero fields are no limit.
	Limits Limits
}

var statsSQL = stmt{
	sqlite: `select queue, state, count(*),
    min(case when state = 'available' and run_at <= ?1 then run_at end)
from lite_jobs group by queue, state order by queue`,
	postgres: `select queue, state, count(*),
    min(case when state = 'available' and run_at <= $1 then run_at end)
from lite_jobs group by queue, state order by queue`,
}

// Stats counts jobs per queue and state, in queue order, with each
// queue's pause and limits. A queue with settings but no jobs is listed
// too, with no counts.
func (q *Queue) Stats(ctx context.Context) ([]QueueStats, error) {
	stats, err := q.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	stats, err = q.withFlows(ctx, stats)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return stats, nil
}

// withFlows sets each queue's pause and limits in stats, and adds a row
// for each queue that has settings but no row, keeping queue order.
func (q *Queue) withFlows(ctx context.Context, stats []QueueStats) ([]QueueStats, error) {
	flows, err := q.queueFlows(ctx)
	if err != nil {
		return nil, err
	}
	for i := range stats {
		if f, ok := flows[stats[i].Queue]; ok {
			stats[i].Paused, stats[i].Limits = f.paused, f.limits
			delete(flows, stats[i].Queue)
		}
	}
	for queue, f := range flows {
		stats = append(stats, QueueStats{Queue: queue, Counts: map[State]int64{}, Paused: f.paused, Limits: f.limits})
	}
	// Both lists are in queue order, and so is a bytewise sort: the text
	// order of both engines (PostgreSQL's queue column collates "C").
	slices.SortFunc(stats, func(a, b QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return stats, nil
}

// jobStats counts jobs per queue and state, in queue order.
func (q *Queue) jobStats(ctx context.Context) ([]QueueStats, error) {
	now := q.nowMillis()
	rows, err := q.r.QueryContext(ctx, q.sql(statsSQL), now)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", classify(err))
	}
	defer rows.Close()
	var out []QueueStats
	for rows.Next() {
		var (
			queue  string
			state  State
			n      int64
			oldest sql.NullInt64
		)
		if err := rows.Scan(&queue, &state, &n, &oldest); err != nil {
			return nil, fmt.Errorf("stats: %w", classify(err))
		}
		if len(out) == 0 || out[len(out)-1].Queue != queue {
			out = append(out, QueueStats{Queue: queue, Counts: map[State]int64{}})
		}
		s := &out[len(out)-1]
		s.Counts[state] = n
		if oldest.Valid {
			s.OldestReady = time.Duration(now-oldest.Int64) * time.Millisecond
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("stats: %w", classify(err))
	}
	return out, nil
}

var unfinishedSQL = stmt{
	sqlite: `select count(*) from lite_jobs
where state in ('available', 'running') and (?1 is null or queue in (select value from json_each(?1)))`,
	postgres: `select count(*) from lite_jobs
where state in ('available', 'running') and ($1::jsonb is null or queue in (select jsonb_array_elements_text($1::jsonb)))`,
}

// Unfinished counts the available and running jobs in the queues (every
// queue when empty).
func (q *Queue) Unfinished(ctx context.Context, queues []string) (int64, error) {
	var n int64
	err := q.r.QueryRowContext(ctx, q.sql(unfinishedSQL), nullList(queues)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished: %w", classify(err))
	}
	return n, nil
}
