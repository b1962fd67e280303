package lite

import (
	"context"
	"fmt"
)

// RunJob runs the job with the given id now, whatever its run_at, through
// the machinery RunOnce uses: it leases the job, runs its handler with
// heartbeats, and writes the outcome as a worker in production does
// (CommitWithAck writes and SetResult's result with the done-ack, a
// Snooze, a failure and its backoff). It returns the event that ended
// the run: EventDone, EventFailed, EventSnoozed, EventParked, EventReleased (ctx ended
// first, so the handler was cancelled and the job given back) or
// EventLeaseLost.
//
// The id alone picks the job: the worker's Queues do not apply. An
// unknown id gives ErrNotFound, a job that is not available (running,
// finished) ErrInvalidState, and a job of a kind the worker has no handler
// for an error naming the kind; none of them changes the job. Like
// RunOnce, it is refused while the worker runs. Tests run a handler with
// it (see package litetest), where calling the handler directly would
// skip what its ack writes.
func (w *Worker) RunJob(ctx context.Context, id int64) (Event, error) {
	if err := w.begin(); err != nil {
		return Event{}, fmt.Errorf("run job %d: %w", id, err)
	}
	defer w.end()
	j, err := w.q.leaseByID(ctx, id, w.kindList, w.opts.Identity, w.opts.StaleAfter)
	if err != nil {
		return Event{}, fmt.Errorf("run job %d: %w", id, err)
	}
	// A ctx that ended meanwhile cancels the handler at once, and the job
	// is released as at any shutdown: the event says so.
	runs := w.runLeased(ctx, []leased{{w.laneOf(j.Queue), j}})
	return runs[0].ended, nil
}

// leased is a job a lane of the worker leased.
type leased struct {
	lane *lane
	job  *Job
}

// laneOf is the lane a job of queue runs in: its own queue's, or the
// first (the only one, when the worker serves every queue). A job run by
// id may be of a queue the worker does not serve; it still holds a slot.
func (w *Worker) laneOf(queue string) *lane {
	for _, l := range w.lanes {
		if len(l.queues) == 1 && l.queues[0] == queue {
			return l
		}
	}
	return w.lanes[0]
}

// runLeased runs jobs the worker has just leased until every one has
// settled: each in a slot of its own, with heartbeats and group commit.
// When ctx ends, their handlers are cancelled with ErrShutdown and their
// jobs released.
func (w *Worker) runLeased(ctx context.Context, jobs []leased) []*run {
	handlerCtx, stopHandlers := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHandlers(nil)
	stopOnCancel := context.AfterFunc(ctx, func() { stopHandlers(ErrShutdown) })
	defer stopOnCancel()
	stopBeats := w.every(ctx, w.opts.HeartbeatInterval, w.heartbeatLogged)
	stopAcks := w.startAcks()

	runs := make([]*run, len(jobs))
	for i, j := range jobs {
		runs[i] = w.start(handlerCtx, j.lane, j.job)
	}
	w.waitRuns(nil)
	stopAcks()
	stopBeats()
	return runs
}

func jobsOf(list []leased) []*Job {
	jobs := make([]*Job, len(list))
	for i, l := range list {
		jobs[i] = l.job
	}
	return jobs
}
