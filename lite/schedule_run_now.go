package lite

import (
	"context"
	"errors"
	"fmt"
)

// RunScheduleNow enqueues the named schedule's job now, as an operator's
// "run it now", and returns its id: the schedule's ticks stay as they
// were, so it still fires at its next one. A paused schedule's job is
// enqueued too (the operator asked for this one). A job holding the
// schedule's unique key gives ErrDuplicate; an unknown name,
// ErrNoSchedule.
func (q *Queue) RunScheduleNow(ctx context.Context, name string) (int64, error) {
	list, err := q.Schedules(ctx)
	if err != nil {
		return 0, fmt.Errorf("run schedule %q now: %w", name, err)
	}
	for _, s := range list {
		if s.Name == name {
			id, err := q.Enqueue(ctx, s.Job) // which waits for Options.AfterCommit
			switch {
			case errors.Is(err, ErrAfterCommit):
				return id, fmt.Errorf("run schedule %q now: %w", name, err) // enqueued all the same
			case err != nil:
				return 0, fmt.Errorf("run schedule %q now: %w", name, err)
			}
			return id, nil
		}
	}
	return 0, fmt.Errorf("run schedule %q now: %w", name, ErrNoSchedule)
}
