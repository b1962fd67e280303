package lite

import (
	"context"
	"time"
)

// NextRunAt is when a worker leasing from queues (nil: every queue) would
// next try, and whether a full queue holds jobs back.
func NextRunAt(ctx context.Context, q *Queue, queues []string) (time.Time, bool, error) {
	return q.nextRunAt(ctx, queues, nil)
}
