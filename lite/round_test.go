package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// A worker's round on PostgreSQL acks and leases in one statement (see
// ackAndLease): each ack keeps its own guard and its own result, and the
// lease its own.

func TestARoundsStaleAckNeverTouchesTheSuccessorAndTheRestCommits(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	q, _ := onPostgres(t).mustOpen(t, clock)
	ctx := t.Context()
	stolen := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	kept := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	a := mustLeaseOne(t, q, "q")
	c := mustLeaseOne(t, q, "q")
	is.Equal(a.ID, stolen)
	_, err := q.ReleaseUnowned(ctx, stolen)
	is.NoErr(err)
	b := mustLeaseOne(t, q, "q") // the successor
	is.True(b.Generation > a.Generation)
	next := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	running := mustGet(t, q, stolen)
	clock.Advance(time.Second)

	results, jobs, err := lite.AckAndLease(ctx, q,
		[]lite.Done{{Lease: a.Lease(), Result: []byte("A")}, {Lease: c.Lease(), Result: []byte("C")}},
		lite.LeaseRequest{Queues: []string{"q"}, Max: 2, LockedBy: "worker-a"})
	is.NoErr(err)
	is.True(errors.Is(results[0], lite.ErrLeaseLost)) // A's ack: its lease is B's now
	is.NoErr(results[1])
	is.Equal(mustGet(t, q, stolen), running) // B's running row, untouched
	done := mustGet(t, q, kept)
	is.Equal(done.State, lite.StateDone)
	is.Equal(string(done.Result), "C")
	// The lease took the one job available, under a fresh lease, and
	// neither the running job nor the one just acked.
	is.Equal(len(jobs), 1)
	is.Equal(jobs[0].ID, next)
	is.Equal(jobs[0].State, lite.StateRunning)
	is.Equal(jobs[0].Generation, int64(1))
	is.Equal(jobs[0].LockedBy, "worker-a")
	is.Equal(mustGet(t, q, next).LeaseToken, jobs[0].LeaseToken)
}

func TestARoundsSecondAckOfOneLeaseChangesNothing(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	q, _ := onPostgres(t).mustOpen(t, clock)
	ctx := t.Context()
	id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	a := mustLeaseOne(t, q, "q")
	is.NoErr(q.AckDone(ctx, a.Lease(), []byte("first")))
	before := mustGet(t, q, id)
	clock.Advance(time.Second)

	results, jobs, err := lite.AckAndLease(ctx, q, []lite.Done{{Lease: a.Lease(), Result: []byte("second")}},
		lite.LeaseRequest{Queues: []string{"q"}, Max: 1})
	is.NoErr(err)
	is.True(errors.Is(results[0], lite.ErrLeaseLost))
	is.Equal(len(jobs), 0) // the done job is not available
	is.Equal(mustGet(t, q, id), before)
}

func TestARoundLeasesNothingFromAQueueWithLimits(t *testing.T) {
	is := is.New(t)
	q, _ := onPostgres(t).mustOpen(t, newFakeClock())
	ctx := t.Context()
	mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	is.NoErr(q.SetLimits(ctx, "q", lite.Limits{MaxRunning: 5}))
	_, jobs, err := lite.AckAndLease(ctx, q, nil, lite.LeaseRequest{Queues: []string{"q"}, Max: 1})
	is.NoErr(err)
	is.Equal(len(jobs), 0) // the worker's loop leases it, under the queue's lock
}

func TestAWorkerOnPostgresRunsEachJobOnceAndNeverMoreHandlersThanItsConcurrency(t *testing.T) {
	is := is.New(t)
	q, _ := onPostgres(t).mustOpen(t, nil)
	const jobs, concurrency = 600, 8
	batch := make([]lite.NewJob, jobs)
	for i := range batch {
		batch[i] = lite.NewJob{Queue: "q"}
	}
	_, err := q.EnqueueBatch(t.Context(), batch)
	is.NoErr(err)
	var (
		mu             sync.Mutex
		ran            = map[int64]int{}
		inside, most   atomic.Int64
		done           atomic.Int64
		all            = make(chan struct{})
		fullSlotsSeen  atomic.Bool
		negativeFreeAt atomic.Int64
	)
	w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: concurrency, OnEvent: func(ev lite.Event) {
		if ev.Kind == lite.EventDone && done.Add(1) == jobs {
			close(all)
		}
	}})
	is.NoErr(err)
	w.Handle(lite.AnyKind, func(_ context.Context, j *lite.Job) error {
		n := inside.Add(1)
		defer inside.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if free := lite.FreeSlots(w)[""]; free < 0 {
			negativeFreeAt.Store(j.ID)
		} else if free == 0 {
			fullSlotsSeen.Store(true)
		}
		mu.Lock()
		ran[j.ID]++
		mu.Unlock()
		return nil
	})
	ctx, stop := context.WithCancel(t.Context())
	ran2 := make(chan struct{})
	go func() { w.Run(ctx); close(ran2) }()
	select {
	case <-all:
	case <-time.After(time.Minute):
		t.Fatalf("%d of %d jobs done in a minute", done.Load(), jobs)
	}
	stop()
	<-ran2
	is.Equal(len(ran), jobs)
	for id, n := range ran {
		if n != 1 {
			t.Errorf("job %d ran %d times", id, n)
		}
	}
	is.True(most.Load() <= concurrency)
	is.Equal(negativeFreeAt.Load(), int64(0)) // no slot was given out twice
	is.True(fullSlotsSeen.Load())
}

// TestEachWriteOfARoundKeepsItsOwnResult pins the writer's rounds: writes
// that gather for one round share its transaction, and each keeps its own
// result. A done-ack whose CommitWithAck writes fail leaves none of them,
// a stale ack is refused, and a held unique key fails only its own
// enqueue, while the acks and the enqueue beside them commit.
func TestEachWriteOfARoundKeepsItsOwnResult(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := mustOpen(t, newFakeClock())
	_, err := q.DB().ExecContext(ctx, `create table app (x integer)`)
	is.NoErr(err)
	for range 3 {
		mustEnqueue(t, q, lite.NewJob{Kind: "k"})
	}
	mustEnqueue(t, q, lite.NewJob{Kind: "held", UniqueKey: "u", RunAt: time.Now().Add(time.Hour)})
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Kinds: []string{"k"}, Max: 3})
	is.NoErr(err)
	is.Equal(len(jobs), 3)
	_, err = q.ReleaseUnowned(ctx, jobs[2].ID)
	is.NoErr(err)

	// Prepared before the round is held, which preparing would wait for.
	is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: 1}, nil), lite.ErrLeaseLost))

	results := inOneRound(q,
		func() error {
			return q.Complete(ctx, jobs[0].Lease(), nil, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `insert into app values (1)`); err != nil {
					return err
				}
				return errors.New("the app refused")
			})
		},
		func() error { return q.AckDone(ctx, jobs[1].Lease(), []byte("ok")) },
		func() error { return q.AckDone(ctx, jobs[2].Lease(), nil) },
		func() error { _, err := q.Enqueue(ctx, lite.NewJob{Kind: "held", UniqueKey: "u"}); return err },
		func() error { _, err := q.Enqueue(ctx, lite.NewJob{Kind: "new"}); return err },
	)

	is.True(results[0] != nil && !errors.Is(results[0], lite.ErrLeaseLost)) // the app's writes failed
	is.NoErr(results[1])
	is.True(errors.Is(results[2], lite.ErrLeaseLost))
	is.True(errors.Is(results[3], lite.ErrDuplicate))
	is.NoErr(results[4])
	var rows int
	is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from app`).Scan(&rows))
	is.Equal(rows, 0) // the failed writes left nothing
	states := map[int64]lite.State{}
	for _, j := range jobs {
		got, err := q.Get(ctx, j.ID)
		is.NoErr(err)
		states[j.ID] = got.State
	}
	is.Equal(states[jobs[0].ID], lite.StateRunning)
	is.Equal(states[jobs[1].ID], lite.StateDone)
	is.Equal(states[jobs[2].ID], lite.StateAvailable)
}

// TestAWriteWhoseCallerGaveUpFailsAlone pins that a write whose context
// ends while it waits for its round is not run, and fails with its
// context's error, while the writes beside it commit.
func TestAWriteWhoseCallerGaveUpFailsAlone(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := mustOpen(t, newFakeClock())
	id := mustEnqueue(t, q, lite.NewJob{Kind: "k"})
	jobs, err := q.Lease(ctx, lite.LeaseRequest{})
	is.NoErr(err)
	is.Equal(len(jobs), 1)
	// Prepared before the round is held, which preparing would wait for.
	is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: id + 1}, nil), lite.ErrLeaseLost))

	waiting, release := lite.HoldRounds(q)
	gaveUp, giveUp := context.WithCancel(ctx)
	var enqueued, acked error
	var wg sync.WaitGroup
	wg.Go(func() { _, enqueued = q.Enqueue(gaveUp, lite.NewJob{Kind: "late"}) })
	wg.Go(func() { acked = q.AckDone(ctx, jobs[0].Lease(), nil) })
	for waiting() < 2 {
		time.Sleep(time.Millisecond) // until both writes are handed in
	}
	giveUp()
	release()
	wg.Wait()

	is.True(errors.Is(enqueued, context.Canceled))
	is.NoErr(acked)
	got, err := q.Get(ctx, id)
	is.NoErr(err)
	is.Equal(got.State, lite.StateDone)
	var late int
	is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from lite_jobs where kind = 'late'`).Scan(&late))
	is.Equal(late, 0) // the enqueue that gave up wrote nothing
}

// inOneRound runs writes at once while q's writer holds a round, so that
// they gather for the next one, and returns their results in order.
func inOneRound(q *lite.Queue, writes ...func() error) []error {
	waiting, release := lite.HoldRounds(q)
	var wg sync.WaitGroup
	results := make([]error, len(writes))
	for i, write := range writes {
		wg.Go(func() { results[i] = write() })
	}
	for waiting() < len(writes) {
		time.Sleep(time.Millisecond) // until every write is handed in
	}
	release()
	wg.Wait()
	return results
}

// A writer's round runs the plain done-acks it gathers (a result, no
// CommitWithAck writes) as one statement (see ackRound): each is fenced
// on its own row and answered on its own.

func TestARoundsPlainAcksKeepEachItsOwnResult(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	clock := newFakeClock()
	q, _ := mustOpen(t, clock)
	const n = 9
	jobs := mustLeaseNew(t, q, n)
	stale := jobs[2].Lease()
	successor := leasedAgain(t, q, stale)
	twice := jobs[5].Lease() // acked already, under the same generation
	is.NoErr(q.AckDone(ctx, twice, []byte("first")))
	running, done := mustGet(t, q, stale.JobID), mustGet(t, q, twice.JobID)
	clock.Advance(time.Second)

	writes := make([]func() error, n)
	for i, j := range jobs {
		writes[i] = func() error { return q.AckDone(ctx, j.Lease(), []byte("r"+strconv.Itoa(i))) }
	}
	results := inOneRound(q, writes...)

	for i, j := range jobs {
		switch j.ID {
		case stale.JobID:
			is.True(errors.Is(results[i], lite.ErrLeaseLost))
			var lost *lite.LeaseLostError
			is.True(errors.As(results[i], &lost))
			is.Equal(lost.CurrentGeneration, successor.Generation) // the same error as an ack alone
			is.Equal(mustGet(t, q, j.ID), running)                 // the successor's row, untouched
		case twice.JobID:
			is.True(errors.Is(results[i], lite.ErrLeaseLost))
			is.Equal(mustGet(t, q, j.ID), done) // the first ack's result stays
		default:
			is.NoErr(results[i])
			got := mustGet(t, q, j.ID)
			is.Equal(got.State, lite.StateDone)
			is.Equal(string(got.Result), "r"+strconv.Itoa(i))
			is.True(got.FinishedAt.Equal(clock.Now())) // the round's time
		}
	}
}

func TestAnAckThatATriggerRefusesFailsAloneInItsRound(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := mustOpen(t, newFakeClock())
	const n = 4
	jobs := mustLeaseNew(t, q, n)
	refused := jobs[1].ID
	// Prepared before the round is held, which preparing would wait for.
	is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: jobs[n-1].ID + 1}, nil), lite.ErrLeaseLost))
	// An app's own trigger on the jobs table that refuses one job's end.
	_, err := q.DB().ExecContext(ctx, `create trigger app_refuses after update of state on lite_jobs
when new.id = `+strconv.FormatInt(refused, 10)+` and new.state = 'done'
begin select raise(abort, 'the app refused'); end`)
	is.NoErr(err)

	writes := make([]func() error, n)
	for i, j := range jobs {
		writes[i] = func() error { return q.AckDone(ctx, j.Lease(), nil) }
	}
	results := inOneRound(q, writes...)

	for i, j := range jobs {
		got := mustGet(t, q, j.ID)
		if j.ID == refused {
			is.True(results[i] != nil && !errors.Is(results[i], lite.ErrLeaseLost))
			is.Equal(got.State, lite.StateRunning)
			continue
		}
		is.NoErr(results[i])
		is.Equal(got.State, lite.StateDone)
	}
}

// leasedAgain releases stale's job and leases it again: the successor's,
// which it returns.
func leasedAgain(t *testing.T, q *lite.Queue, stale lite.Lease) *lite.Job {
	t.Helper()
	if _, err := q.ReleaseUnowned(t.Context(), stale.JobID); err != nil {
		t.Fatal(err)
	}
	successor := mustLeaseOne(t, q, "q")
	if successor.ID != stale.JobID {
		t.Fatalf("leased job %d again, not %d", successor.ID, stale.JobID)
	}
	return successor
}

// mustLeaseNew enqueues n jobs to queue q and leases them all.
func mustLeaseNew(t *testing.T, q *lite.Queue, n int) []*lite.Job {
	t.Helper()
	for range n {
		mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	}
	jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: n})
	if err != nil || len(jobs) != n {
		t.Fatalf("lease %d: %d jobs, %v", n, len(jobs), err)
	}
	return jobs
}

// A round writes the steps' records it gathers as one statement (see
// stepRound): each is fenced on its own lease and bounded by its own
// job's records, and answered on its own, as a step recorded alone is.
func TestARoundsStepsKeepEachItsOwnResult(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	clock := newFakeClock()
	q := mustOpenOpts(t, filepath.Join(t.TempDir(), "lite.db"), lite.Options{Now: clock.Now, MaxPayloadBytes: lite.MaxStepsBytes})
	const n = 9
	jobs := mustLeaseNew(t, q, n)
	stale := jobs[1].Lease()
	leasedAgain(t, q, stale)
	recordedBefore := jobs[2].Lease()
	_, err := q.RecordStep(ctx, recordedBefore, "s", []byte("first"))
	is.NoErr(err)
	full := jobs[3].Lease() // 10 bytes short of its bound
	_, err = q.RecordStep(ctx, full, "big", make([]byte, lite.MaxStepsBytes-10))
	is.NoErr(err)
	acked := jobs[8].Lease() // done under this same lease
	is.NoErr(q.AckDone(ctx, acked, nil))
	many := jobs[7].Lease() // as many steps as a job may record
	_, err = q.DB().ExecContext(ctx, `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
insert into lite_steps (job_id, name, generation, result, recorded_at) select ?, 'n' || i, ?, x'', 0 from n`,
		lite.MaxSteps, many.JobID, many.Generation)
	is.NoErr(err)
	clock.Advance(time.Second)

	type step struct {
		lease        lite.Lease
		name, result string
	}
	steps := []step{
		{jobs[0].Lease(), "s", "r0"},
		{stale, "s", "stale"},
		{recordedBefore, "s", "second"},
		{full, "s", "eleven byte"},
		{jobs[4].Lease(), "a", "r4a"}, // two steps of one job
		{jobs[4].Lease(), "b", "r4b"},
		{jobs[5].Lease(), "x", "r5"}, // one step asked for twice: the first to land wins
		{jobs[5].Lease(), "x", "r5 again"},
		{jobs[6].Lease(), "s", ""},
		{many, "s", "one more"},
		{acked, "s", "late"},
	}
	stored := make([][]byte, len(steps))
	writes := make([]func() error, len(steps))
	for i, s := range steps {
		writes[i] = func() (err error) {
			stored[i], err = q.RecordStep(ctx, s.lease, s.name, []byte(s.result))
			return err
		}
	}
	results := inOneRound(q, writes...)

	is.Equal(stored[6], stored[7]) // both calls get the one record
	for i, s := range steps {
		if s.lease == jobs[5].Lease() {
			is.NoErr(results[i])
			got, _, err := q.StepResult(ctx, s.lease.JobID, "x")
			is.NoErr(err)
			is.Equal(got, stored[i])
			continue
		}
		switch s.lease {
		case stale, acked:
			is.True(errors.Is(results[i], lite.ErrLeaseLost))
			_, ok, err := q.StepResult(ctx, s.lease.JobID, "s")
			is.NoErr(err)
			is.True(!ok) // nothing recorded for the successor's job
		case recordedBefore:
			is.NoErr(results[i])
			is.Equal(string(stored[i]), "first") // the record stays, and is what the call gets
		case full, many:
			is.True(errors.Is(results[i], lite.ErrStepsFull))
			_, ok, err := q.StepResult(ctx, s.lease.JobID, "s")
			is.NoErr(err)
			is.True(!ok)
		default:
			is.NoErr(results[i])
			is.Equal(string(stored[i]), s.result)
			steps, err := q.Steps(ctx, s.lease.JobID)
			is.NoErr(err)
			var found bool
			for _, r := range steps {
				if r.Name == s.name {
					found = true
					is.Equal(string(r.Result), s.result)
					is.Equal(r.Generation, s.lease.Generation)
					is.True(r.RecordedAt.Equal(clock.Now())) // the round's time
				}
			}
			is.True(found) // step i recorded
		}
	}
}
