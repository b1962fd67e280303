package lite_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// gates holds each job's handler until the test opens the job's gate.
type gates struct {
	mu     sync.Mutex
	gate   map[int64]chan struct{}
	opened bool // every gate is open, also those of jobs not yet seen
}

// runGated runs w with a handler that waits for each job's gate. Every
// gate opens at cleanup, before the worker stops.
func runGated(t *testing.T, w *lite.Worker) *gates {
	t.Helper()
	g := &gates{gate: map[int64]chan struct{}{}}
	w.Handle(lite.AnyKind, func(_ context.Context, job *lite.Job) error {
		<-g.of(job.ID)
		return nil
	})
	runWorker(t, w)
	t.Cleanup(g.openAll) // runs before runWorker's stop
	return g
}

func (g *gates) of(id int64) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.gate[id]
	if !ok {
		ch = make(chan struct{})
		if g.opened {
			close(ch)
		}
		g.gate[id] = ch
	}
	return ch
}

func (g *gates) open(id int64) { close(g.of(id)) }

func (g *gates) openAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.opened = true
	for _, ch := range g.gate {
		select {
		case <-ch:
		default:
			close(ch)
		}
	}
}

// enqueueIn enqueues n jobs in queue and returns their ids.
func enqueueIn(t *testing.T, q *lite.Queue, queue string, n int) []int64 {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = mustEnqueue(t, q, lite.NewJob{Queue: queue})
	}
	return ids
}

// running counts each queue's running jobs.
func running(t *testing.T, q *lite.Queue) map[string]int64 {
	t.Helper()
	stats, err := q.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int64{}
	for _, s := range stats {
		n[s.Queue] = s.Counts[lite.StateRunning]
	}
	return n
}

// idleSnapshots sends the free slots of w's queues each time its loop has
// leased what it could and is about to wait, the first ones first. Once
// the test has not taken a hundred, the loop goes on without sending.
func idleSnapshots(w *lite.Worker) <-chan map[string]int {
	ch := make(chan map[string]int, 100)
	lite.SetIdleHook(w, func() {
		select {
		case ch <- lite.FreeSlots(w):
		default:
		}
	})
	return ch
}

// awaitStarted returns once the job has started, skipping other jobs'
// starts.
func awaitStarted(t *testing.T, ev *events, id int64) {
	t.Helper()
	for {
		if ev.await(t, lite.EventStarted).JobID == id {
			return
		}
	}
}

func TestABacklogInOneQueueNeverDelaysAnother(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		// One job enqueued, cloned 9,999 times in one statement: 10,000
		// enqueues take seconds under the race detector.
		first := mustEnqueue(t, q, lite.NewJob{Queue: "a"})
		_, err := lite.WriterDB(q).ExecContext(t.Context(), `insert into lite_jobs
    (queue, kind, payload, priority, run_at, max_attempts, created_at)
with recursive n(i) as (select 1 union all select i + 1 from n where i < 9999)
select queue, kind, payload, priority, run_at, max_attempts, created_at from lite_jobs, n where id = $1`, first)
		is.NoErr(err)
		stats, err := q.Stats(t.Context())
		is.NoErr(err)
		is.Equal(stats[0].Counts[lite.StateAvailable], int64(10_000))
		// Due as soon as the backlog and behind all of it in lease order
		// (priority, run_at, id): a worker leasing across both queues would
		// take it after 10,000 others.
		b := mustEnqueue(t, q, lite.NewJob{Queue: "b"})

		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{
			"a": {Concurrency: 4},
			"b": {Concurrency: 1},
		}})
		type state struct {
			state lite.State
			err   error
		}
		firstRound := make(chan state, 1)
		var once sync.Once
		lite.SetIdleHook(w, func() {
			once.Do(func() {
				j, err := q.Get(t.Context(), b)
				if err != nil {
					firstRound <- state{err: err}
					return
				}
				firstRound <- state{state: j.State}
			})
		})
		runGated(t, w)

		// why: the loop calls the hook once it has leased for every queue with
		// a free slot, so this is b's state after the first round of leases
		is.Equal(recv(t, firstRound), state{state: lite.StateRunning})
		awaitStarted(t, ev, b)
		is.Equal(running(t, q), map[string]int64{"a": 4, "b": 1})
	})
}

func TestEachQueueOfAWorkerHasSlotsOfItsOwn(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("no queue runs more jobs at once than its own slots", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			a := enqueueIn(t, q, "a", 5)
			enqueueIn(t, q, "b", 5)
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{
				Concurrency: 3, // b's, by default
				Queues:      map[string]lite.QueueConfig{"a": {Concurrency: 2}, "b": {}},
			})
			idle := idleSnapshots(w)
			g := runGated(t, w)

			is.Equal(recv(t, idle), map[string]int{"a": 0, "b": 0}) // the first round filled both
			is.Equal(running(t, q), map[string]int64{"a": 2, "b": 3})

			g.open(a[0])
			awaitStarted(t, ev, a[2]) // a's next job takes a's freed slot
			is.Equal(running(t, q), map[string]int64{"a": 2, "b": 3})
		})

		t.Run("a slot freed in a full queue is filled at once while another queue's slots wait for work", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			a := enqueueIn(t, q, "a", 3)
			b := mustEnqueue(t, q, lite.NewJob{Queue: "b"})
			w, ev, _ := testWorker(t, q, lite.WorkerOptions{
				Queues: map[string]lite.QueueConfig{"a": {Concurrency: 2}, "b": {Concurrency: 3}},
				// No poll, no WAL watch, and nothing written that wakes a
				// worker: only the freed slot itself can wake the loop.
				PollInterval: time.Hour,
			})
			lite.PollOnly(w)
			idle := idleSnapshots(w)
			g := runGated(t, w)

			// why: a is full with a job waiting and b has free slots and
			// nothing to do, so the loop waits for work, not for a slot
			is.Equal(recv(t, idle), map[string]int{"a": 0, "b": 2})
			awaitStarted(t, ev, b)
			g.open(a[0])
			awaitStarted(t, ev, a[2])
			is.Equal(running(t, q), map[string]int64{"a": 2, "b": 1})
		})
	})
}

func TestAWorkerWithNoQueuesSharesItsSlotsAcrossEveryQueue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		x := enqueueIn(t, q, "x", 3)
		y := enqueueIn(t, q, "y", 2)
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{Concurrency: 3})
		idle := idleSnapshots(w)
		g := runGated(t, w)

		is.Equal(recv(t, idle), map[string]int{"": 0})
		// why: one pool in lease order, so x's three older jobs take every slot
		is.Equal(running(t, q), map[string]int64{"x": 3, "y": 0})
		g.open(x[0])
		awaitStarted(t, ev, y[0]) // x's freed slot is y's
		is.Equal(running(t, q), map[string]int64{"x": 2, "y": 1})
	})
}

func TestRunOnceLeasesOneBatchForEachQueue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		enqueueIn(t, q, "a", 5)
		enqueueIn(t, q, "b", 3)
		w, _, _ := testWorker(t, q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{
			"a": {Concurrency: 2},
			"b": {Concurrency: 1},
		}})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		rep, err := w.RunOnce(t.Context())
		is.NoErr(err)
		is.Equal(rep, lite.Report{Leased: 3, Done: 3})
		stats, err := q.Stats(t.Context())
		is.NoErr(err)
		is.Equal(len(stats), 2)
		is.Equal(stats[0].Counts, map[lite.State]int64{lite.StateDone: 2, lite.StateAvailable: 3})
		is.Equal(stats[1].Counts, map[lite.State]int64{lite.StateDone: 1, lite.StateAvailable: 2})
	})
}

func TestNewWorkerRefusesBadQueues(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.mustOpen(t, newFakeClock())
		for name, c := range map[string]struct {
			queues map[string]lite.QueueConfig
			want   string
		}{
			"an empty queue name":                    {map[string]lite.QueueConfig{"": {}}, "empty queue name"},
			"a queue name with a control character":  {map[string]lite.QueueConfig{"a\nb": {}}, "control character"},
			"a queue name with a C1 control":         {map[string]lite.QueueConfig{"a\u009b31m": {}}, "control character"},
			"a negative concurrency":                 {map[string]lite.QueueConfig{"a": {Concurrency: -1}}, "negative Concurrency -1"},
			"a negative concurrency among good ones": {map[string]lite.QueueConfig{"a": {}, "b": {Concurrency: -2}}, `queue "b"`},
		} {
			t.Run(name+" is refused", func(t *testing.T) {
				is := is.New(t)
				_, err := lite.NewWorker(q, lite.WorkerOptions{Queues: c.queues})
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), c.want))
			})
		}
	})
}
