package lite

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// EnqueueFunc adds jobs, as EnqueueBatch does, and returns each one's
// outcome in order.
type EnqueueFunc func(ctx context.Context, jobs []NewJob) ([]Enqueued, error)

// EnqueueMiddleware wraps every enqueue a caller makes on a queue
// (Enqueue, EnqueueTx, EnqueueBatch, EnqueueBatchTx, EnqueueWorkflow,
// EnqueueWorkflowTx, and so the typed Enqueue, a batch with a callback,
// and the CLI's enqueue, which call them): it sees the
// jobs before they are checked and inserted, may change them (stamp a
// trace context into their Meta, add a tag), and sees the outcome next
// returns. A single Enqueue comes as a batch of one; a workflow's steps
// come as one batch, in the order given, and their outcomes carry only
// their ids. The jobs are the queue's own copies, Meta maps included, so
// a middleware may change them in place; it must hand next as many jobs
// as it was given. Returning an error without calling next refuses the
// enqueue. Jobs lite enqueues on its own, a schedule's fires and the
// callbacks a job's or a batch's end enqueues, do not go through it:
// they have no caller, and commit inside lite's own transaction (a
// fire's compare-and-set, an ack).
type EnqueueMiddleware func(next EnqueueFunc) EnqueueFunc

// errJobsMiscounted refuses an enqueue whose middleware handed on a
// different number of jobs than it was given.
var errJobsMiscounted = errors.New("enqueue middleware changed the number of jobs")

// intercepted runs insert on jobs through the queue's enqueue middleware,
// the first outermost.
func (q *Queue) intercepted(ctx context.Context, jobs []NewJob, insert EnqueueFunc) ([]Enqueued, error) {
	mws := q.opts.EnqueueMiddleware
	if len(mws) == 0 {
		return insert(ctx, jobs)
	}
	jobs = slices.Clone(jobs)
	for i := range jobs {
		jobs[i].Meta = maps.Clone(jobs[i].Meta)
		jobs[i].Tags = slices.Clone(jobs[i].Tags)
	}
	want := len(jobs)
	next := func(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
		if len(jobs) != want {
			return nil, fmt.Errorf("enqueue: %w (%d, then %d)", errJobsMiscounted, want, len(jobs))
		}
		return insert(ctx, jobs)
	}
	for i := len(mws) - 1; i >= 0; i-- {
		next = mws[i](next)
	}
	return next(ctx, jobs)
}

// interceptedOne runs insert on one job through the queue's enqueue
// middleware, as a batch of one.
func (q *Queue) interceptedOne(ctx context.Context, j NewJob, insert func(context.Context, NewJob) (Enqueued, error)) (Enqueued, error) {
	if len(q.opts.EnqueueMiddleware) == 0 {
		return insert(ctx, j)
	}
	out, err := q.intercepted(ctx, []NewJob{j}, func(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
		got, err := insert(ctx, jobs[0])
		return []Enqueued{got}, err
	})
	if len(out) != 1 {
		return Enqueued{}, err
	}
	return out[0], err
}
