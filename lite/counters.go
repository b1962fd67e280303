package lite

import (
	"context"
	"fmt"
)

// Counters are a queue's outcomes since its first job: how many of its
// jobs finished done, dead or cancelled, and how many Retry (one job or
// Bulk) started over. They are kept apart from the jobs, so retention,
// Purge and deleting jobs never lower them, and every process sharing
// the file adds to the same counts. A job counts once each time it
// reaches a state: a job retried and then done again counts twice done.
type Counters struct {
	Queue     string `json:"queue"`
	Done      int64  `json:"done"`
	Dead      int64  `json:"dead"`
	Cancelled int64  `json:"cancelled"`
	Retried   int64  `json:"retried"`
}

var countersSQL = stmt{
	sqlite:   `select queue, counter, sum(n) from lite_counters group by queue, counter order by queue`,
	postgres: `select queue, counter, sum(n)::bigint from lite_counters group by queue, counter order by queue`,
}

// Counters reads every queue's counters, in queue order. A queue none of
// whose jobs has finished yet has none.
func (q *Queue) Counters(ctx context.Context) ([]Counters, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(countersSQL))
	if err != nil {
		return nil, fmt.Errorf("counters: %w", classify(err))
	}
	defer rows.Close()
	var out []Counters
	for rows.Next() {
		var (
			queue, counter string
			n              int64
		)
		if err := rows.Scan(&queue, &counter, &n); err != nil {
			return nil, fmt.Errorf("counters: %w", classify(err))
		}
		if len(out) == 0 || out[len(out)-1].Queue != queue {
			out = append(out, Counters{Queue: queue})
		}
		c := &out[len(out)-1]
		switch counter {
		case "done":
			c.Done = n
		case "dead":
			c.Dead = n
		case "cancelled":
			c.Cancelled = n
		case "retried":
			c.Retried = n
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("counters: %w", classify(err))
	}
	return out, nil
}
