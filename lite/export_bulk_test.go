package lite

import "context"

// BulkApply changes one batch of a bulk action as Bulk does, for tests of
// the guard that holds when a job changed state after it was found.
func BulkApply(ctx context.Context, q *Queue, action BulkAction, ids []int64) (int64, error) {
	return q.bulkApply(ctx, action, ids)
}
