package lite

import (
	"context"
	"fmt"
	"time"
)

// Throughput is how many jobs of one queue finished in one minute, for a
// dashboard's chart: Done acked done, Dead died (attempts spent or a
// permanent error).
type Throughput struct {
	Queue  string    `json:"queue"`
	Minute time.Time `json:"minute"`
	Done   int64     `json:"done"`
	Dead   int64     `json:"dead"`
}

// throughputSQL repeats the finished states literally so that the
// partial index on finished jobs serves the range on finished_at.
var throughputSQL = stmt{
	sqlite: `select queue, finished_at / 60000, sum(state = 'done'), sum(state = 'dead') from lite_jobs
where state in ('done', 'dead', 'cancelled') and finished_at >= ?
group by queue, finished_at / 60000 order by queue, 2`,
	postgres: `select queue, finished_at / 60000, count(*) filter (where state = 'done'), count(*) filter (where state = 'dead') from lite_jobs
where state in ('done', 'dead', 'cancelled') and finished_at >= $1
group by queue, finished_at / 60000 order by queue, 2`,
}

// Throughput counts the jobs that finished done or dead in each minute of
// the last window, per queue, in queue and minute order. A minute in
// which a queue finished nothing has no entry.
func (q *Queue) Throughput(ctx context.Context, window time.Duration) ([]Throughput, error) {
	since := q.nowMillis() - window.Milliseconds()
	rows, err := q.r.QueryContext(ctx, q.sql(throughputSQL), since)
	if err != nil {
		return nil, fmt.Errorf("throughput: %w", classify(err))
	}
	defer rows.Close()
	var out []Throughput
	for rows.Next() {
		var (
			t      Throughput
			minute int64
		)
		if err := rows.Scan(&t.Queue, &minute, &t.Done, &t.Dead); err != nil {
			return nil, fmt.Errorf("throughput: %w", classify(err))
		}
		t.Minute = time.UnixMilli(minute * 60000).UTC()
		if t.Done+t.Dead > 0 {
			out = append(out, t)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("throughput: %w", classify(err))
	}
	return out, nil
}

// backlogSQL counts through the partial indexes on available and running
// jobs alone, so that it costs the same on a file with a million
// finished jobs as on an empty one.
var backlogSQL = stmt{
	sqlite: `select queue, 'available', count(*), min(case when run_at <= ?1 then run_at end)
from lite_jobs where state = 'available' group by queue
union all
select queue, 'running', count(*), null from lite_jobs where state = 'running' group by queue
union all ` + parkedCounts("?1") + `
order by 1`,
	postgres: `select queue, 'available', count(*), min(case when run_at <= $1 then run_at end)
from lite_jobs where state = 'available' group by queue
union all
select queue, 'running', count(*), null from lite_jobs where state = 'running' group by queue
union all ` + parkedCounts("$1") + `
order by 1`,
}

// Backlog is Stats for the unfinished states alone: per queue with jobs
// available or running, their counts and the oldest ready job's wait, in
// queue order, with each queue's pause and limits (a queue with settings
// but no unfinished job is listed too, with no counts). Unlike Stats, which counts every finished job, it stays
// fast however many finished jobs the file keeps: it is for dashboards
// and metrics that ask often.
func (q *Queue) Backlog(ctx context.Context) ([]QueueStats, error) {
	out, err := q.queueCounts(ctx, backlogSQL)
	if err != nil {
		return nil, fmt.Errorf("backlog: %w", err)
	}
	out, err = q.withFlows(ctx, out)
	if err != nil {
		return nil, fmt.Errorf("backlog: %w", err)
	}
	return out, nil
}
