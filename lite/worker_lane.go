package lite

import (
	"maps"
	"slices"
	"time"
)

// lane is a share of a worker's slots with a queue filter of its own: one
// lane per queue in WorkerOptions.Queues, or a single lane of every queue.
// A run holds a slot of the lane that leased it, so a backlog in one lane
// never takes the slots of another.
type lane struct {
	queues []string // what it leases: one queue, or nil for every queue
	slots  int
	busy   int // runs holding a slot; guarded by Worker.mu
	// written is how many of those runs have their outcome written in a
	// round of the writer's that has not yet answered them: their slots
	// count as free, so that a lease in the same round takes them.
	// Guarded by Worker.mu.
	written int

	// Kept by the loop alone, from the lane's last lease.
	backlog   bool          // it filled every slot it asked for: more may wait
	nextRunAt time.Time     // the lane's earliest scheduled job; zero if none
	held      bool          // a queue at its MaxRunning holds some of its jobs back
	retryIn   time.Duration // its last lease failed: wait this long before the next; zero if it did not
}

// queueNames is the queues opts names, in order; nil means every queue.
func (o WorkerOptions) queueNames() []string {
	if len(o.Queues) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(o.Queues))
}

// lanesFor makes the lanes opts describe, in the order of their queue
// names, so that every round leases them in the same order.
func lanesFor(opts WorkerOptions) []*lane {
	if len(opts.Queues) == 0 {
		return []*lane{{slots: opts.Concurrency}}
	}
	names := opts.queueNames()
	lanes := make([]*lane, len(names))
	for i, name := range names {
		lanes[i] = &lane{queues: []string{name}, slots: opts.Queues[name].Concurrency}
	}
	return lanes
}

// slots is how many jobs opts runs at once: its lanes' slots together.
func (o WorkerOptions) slots() int {
	n := 0
	for _, l := range lanesFor(o) {
		n += l.slots
	}
	return n
}

// free is how many of l's slots are free.
func (w *Worker) free(l *lane) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return l.free()
}

// free is how many of l's slots a lease may take; w.mu is held.
func (l *lane) free() int { return l.slots - l.busy + l.written }

// vacate frees r's slot in its lane, once: a run the shutdown gave up on
// was vacated already when its handler finally returns. w.mu is held.
func (w *Worker) vacate(r *run) {
	if r.vacated {
		return
	}
	r.vacated = true
	delete(w.active, r.key())
	r.lane.busy--
	if r.written {
		r.lane.written--
	}
	if w.newest[r.job.ID] == r {
		delete(w.newest, r.job.ID)
	}
}

// laneState is where the lanes stand after a round of leases.
type laneState struct {
	anyFree   bool          // some lane has a free slot
	backlog   bool          // some lane with a free slot filled every slot it asked for last time
	anyFull   bool          // some lane has no free slot: a freed slot may find work waiting
	anyHeld   bool          // some lane with a free slot waits for a queue under its MaxRunning
	nextRunAt time.Time     // the earliest scheduled job of a lane with a free slot; zero if none
	retryIn   time.Duration // the shortest wait of a lane whose lease failed; zero if none failed
	idle      bool          // no slot is busy, no lane has a backlog and no lease failed (the loop then looks once more before it stops)
}

func (w *Worker) laneState() laneState {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := laneState{idle: true}
	for _, l := range w.lanes {
		s.idle = s.idle && l.busy == 0 && !l.backlog && l.retryIn == 0
		if l.retryIn > 0 && (s.retryIn == 0 || l.retryIn < s.retryIn) {
			s.retryIn = l.retryIn
		}
		if l.free() <= 0 {
			s.anyFull = true
			continue
		}
		s.anyFree = true
		s.backlog = s.backlog || l.backlog
		s.anyHeld = s.anyHeld || l.held
		if !l.nextRunAt.IsZero() && (s.nextRunAt.IsZero() || l.nextRunAt.Before(s.nextRunAt)) {
			s.nextRunAt = l.nextRunAt
		}
	}
	return s
}
