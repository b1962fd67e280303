package lite_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// restoreScene is one feature's job, pending, running or finished, that
// a restore (or, for the same test without one, what a restore does to
// a running job: a release) comes between.
type restoreScene struct {
	t        *testing.T
	is       *is.I
	q        *lite.Queue
	clock    *fakeClock
	restored bool
}

// restore fences the queue, as lite restore does, if the scene is
// restored; either way the running jobs given are available again.
func (s *restoreScene) restore(running ...*lite.Job) {
	s.t.Helper()
	if !s.restored {
		for _, j := range running {
			s.is.NoErr(s.q.Release(s.t.Context(), j.Lease()))
		}
		return
	}
	rep, err := s.q.FenceRestore(s.t.Context())
	s.is.NoErr(err)
	s.is.Equal(rep.Requeued, int64(len(running)))
	for _, j := range running {
		s.is.True(mustGet(s.t, s.q, j.ID).Generation > rep.Floor-1) // fenced
	}
}

func (s *restoreScene) enqueue(j lite.NewJob) int64 {
	s.t.Helper()
	if j.Queue == "" {
		j.Queue = "q"
	}
	return mustEnqueue(s.t, s.q, j)
}

// lease leases up to max jobs of queue q and returns their ids.
func (s *restoreScene) lease(max int) []int64 {
	s.t.Helper()
	jobs, err := s.q.Lease(s.t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: max})
	s.is.NoErr(err)
	ids := []int64{}
	for _, j := range jobs {
		ids = append(ids, j.ID)
	}
	return ids
}

// done leases job id (the next in line) and acks it.
func (s *restoreScene) done(id int64) {
	s.t.Helper()
	j := mustLeaseOne(s.t, s.q, "q")
	s.is.Equal(j.ID, id)
	s.is.NoErr(s.q.AckDone(s.t.Context(), j.Lease(), nil))
}

func (s *restoreScene) limits(l lite.Limits) {
	s.is.NoErr(s.q.SetLimits(s.t.Context(), "q", l))
}

// restoreCases each hold one feature's behaviour for a job in one state
// across a restore: the same assertions hold with and without it.
var restoreCases = []struct {
	name string
	run  func(s *restoreScene)
}{
	{"a pending job past its expiry is cancelled, never run", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{ExpiresIn: time.Minute})
		s.restore()
		s.clock.Advance(2 * time.Minute)
		s.is.Equal(s.lease(1), []int64{})
		at, _, err := lite.NextRunAt(s.t.Context(), s.q, []string{"q"})
		s.is.NoErr(err)
		s.is.True(at.IsZero()) // an idle worker does not wake for it
		w, _, _ := testWorker(s.t, s.q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		_, err = w.RunJob(s.t.Context(), id)
		s.is.True(err != nil && strings.Contains(err.Error(), "expired unstarted")) // RunJob says why
		expired, err := s.q.CancelExpired(s.t.Context())
		s.is.NoErr(err)
		s.is.Equal(expired, []int64{id})
	}},
	{"a running job's expiry passing does not stop it: it started in time", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{ExpiresIn: time.Minute})
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.clock.Advance(2 * time.Minute)
		expired, err := s.q.CancelExpired(s.t.Context())
		s.is.NoErr(err)
		s.is.Equal(len(expired), 0)
		s.is.Equal(s.lease(1), []int64{id})
	}},
	{"a finished job's expiry passing changes nothing", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{ExpiresIn: time.Minute})
		s.done(id)
		s.restore()
		s.clock.Advance(2 * time.Minute)
		expired, err := s.q.CancelExpired(s.t.Context())
		s.is.NoErr(err)
		s.is.Equal(len(expired), 0)
		s.is.Equal(mustGet(s.t, s.q, id).State, lite.StateDone)
	}},
	{"a debounce folds into its key's pending job", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{UniqueKey: "k", Debounce: time.Minute, Payload: []byte("1")})
		s.restore()
		s.is.Equal(s.enqueue(lite.NewJob{UniqueKey: "k", Debounce: time.Minute, Payload: []byte("2")}), id)
		s.is.Equal(string(mustGet(s.t, s.q, id).Payload), "2") // the payload is the latest
	}},
	{"a debounce leaves a job that started once alone", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{UniqueKey: "k", Debounce: time.Minute, Payload: []byte("1")})
		s.clock.Advance(time.Minute) // a debounced job runs once its key is quiet
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		_, err := s.q.Enqueue(s.t.Context(), lite.NewJob{Queue: "q", UniqueKey: "k", Debounce: time.Minute, Payload: []byte("2")})
		s.is.True(errors.Is(err, lite.ErrDuplicate))
		s.is.Equal(string(mustGet(s.t, s.q, id).Payload), "1")
	}},
	{"a debounce after its key's job finished enqueues a new one", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{UniqueKey: "k", Debounce: time.Minute})
		s.clock.Advance(time.Minute)
		s.done(id)
		s.restore()
		s.is.True(s.enqueue(lite.NewJob{UniqueKey: "k", Debounce: time.Minute}) > id)
	}},
	{"a unique window held by a pending job refuses the key", func(s *restoreScene) {
		s.enqueue(lite.NewJob{UniqueKey: "k", UniqueFor: time.Hour})
		s.restore()
		_, err := s.q.Enqueue(s.t.Context(), lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Hour})
		s.is.True(errors.Is(err, lite.ErrDuplicate))
	}},
	{"a unique window held by a running job refuses the key", func(s *restoreScene) {
		s.enqueue(lite.NewJob{UniqueKey: "k", UniqueFor: time.Hour})
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		_, err := s.q.Enqueue(s.t.Context(), lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Hour})
		s.is.True(errors.Is(err, lite.ErrDuplicate))
	}},
	{"a unique window of a finished job holds for its period, then lapses", func(s *restoreScene) {
		id := s.enqueue(lite.NewJob{UniqueKey: "k", UniqueFor: time.Hour})
		s.done(id)
		s.restore()
		_, err := s.q.Enqueue(s.t.Context(), lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Hour})
		s.is.True(errors.Is(err, lite.ErrDuplicate))
		s.clock.Advance(2 * time.Hour)
		s.enqueue(lite.NewJob{UniqueKey: "k", UniqueFor: time.Hour})
	}},
	{"a sequence starts a key's pending jobs one at a time, in order", func(s *restoreScene) {
		s.limits(lite.Limits{Sequence: lite.SequenceContinue})
		first := s.enqueue(lite.NewJob{Key: "a"})
		s.enqueue(lite.NewJob{Key: "a"})
		s.restore()
		s.is.Equal(s.lease(10), []int64{first})
	}},
	{"a sequence starts a key's job that ran first again, not the next", func(s *restoreScene) {
		s.limits(lite.Limits{Sequence: lite.SequenceContinue})
		first := s.enqueue(lite.NewJob{Key: "a"})
		s.enqueue(lite.NewJob{Key: "a"})
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.is.Equal(s.lease(10), []int64{first})
	}},
	{"a sequence goes on past a finished job", func(s *restoreScene) {
		s.limits(lite.Limits{Sequence: lite.SequenceContinue})
		first := s.enqueue(lite.NewJob{Key: "a"})
		second := s.enqueue(lite.NewJob{Key: "a"})
		s.done(first)
		s.restore()
		s.is.Equal(s.lease(10), []int64{second})
	}},
	{"a per-key limit starts one of a key's pending jobs", func(s *restoreScene) {
		s.limits(lite.Limits{MaxRunningPerKey: 1})
		s.enqueue(lite.NewJob{Key: "a"})
		s.enqueue(lite.NewJob{Key: "a"})
		s.restore()
		s.is.Equal(len(s.lease(10)), 1)
		s.is.Equal(len(s.lease(10)), 0)
	}},
	{"a per-key limit counts a running job's key again once it runs again", func(s *restoreScene) {
		s.limits(lite.Limits{MaxRunningPerKey: 1})
		s.enqueue(lite.NewJob{Key: "a"})
		s.enqueue(lite.NewJob{Key: "a"})
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.is.Equal(len(s.lease(10)), 1)
		s.is.Equal(len(s.lease(10)), 0)
	}},
	{"a per-key limit frees a finished job's slot", func(s *restoreScene) {
		s.limits(lite.Limits{MaxRunningPerKey: 1})
		first := s.enqueue(lite.NewJob{Key: "a"})
		second := s.enqueue(lite.NewJob{Key: "a"})
		s.done(first)
		s.restore()
		s.is.Equal(s.lease(10), []int64{second})
	}},
	{"a dependent of a pending job waits for it to be done", func(s *restoreScene) {
		parent := s.enqueue(lite.NewJob{})
		child := s.enqueue(lite.NewJob{DependsOn: []int64{parent}})
		s.restore()
		s.is.Equal(mustGet(s.t, s.q, child).State, lite.StateBlocked)
		s.done(parent)
		s.is.Equal(s.lease(10), []int64{child})
	}},
	{"a dependent of a running job waits for it to be done", func(s *restoreScene) {
		parent := s.enqueue(lite.NewJob{})
		child := s.enqueue(lite.NewJob{DependsOn: []int64{parent}})
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.is.Equal(mustGet(s.t, s.q, child).State, lite.StateBlocked)
		s.done(parent)
		s.is.Equal(s.lease(10), []int64{child})
	}},
	{"a dependent of a finished job runs", func(s *restoreScene) {
		parent := s.enqueue(lite.NewJob{})
		child := s.enqueue(lite.NewJob{DependsOn: []int64{parent}})
		s.done(parent)
		s.restore()
		s.is.Equal(s.lease(10), []int64{child})
	}},
	{"a batch with a pending job calls back once, when it ends", func(s *restoreScene) {
		ids := s.batch()
		s.restore()
		s.is.Equal(s.callbacks(), 0)
		s.done(ids[0])
		s.done(ids[1])
		s.is.Equal(s.callbacks(), 1)
	}},
	{"a batch with a running job calls back once, when it ends", func(s *restoreScene) {
		ids := s.batch()
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.is.Equal(s.callbacks(), 0)
		s.done(ids[0])
		s.done(ids[1])
		s.is.Equal(s.callbacks(), 1)
	}},
	{"a finished batch does not call back again", func(s *restoreScene) {
		ids := s.batch()
		s.done(ids[0])
		s.done(ids[1])
		s.restore()
		s.is.Equal(s.callbacks(), 1)
	}},
	{"a schedule's tick skips while its pending job holds the key", func(s *restoreScene) {
		s.schedule()
		s.restore()
		s.tick(0)
	}},
	{"a schedule's tick skips while its running job holds the key", func(s *restoreScene) {
		s.schedule()
		s.restore(mustLeaseOne(s.t, s.q, "q"))
		s.tick(0)
	}},
	{"a schedule's tick enqueues once its job finished", func(s *restoreScene) {
		id := s.schedule()
		s.done(id)
		s.restore()
		s.tick(1)
	}},
}

// batch enqueues a workflow of two steps with a batch callback.
func (s *restoreScene) batch() []int64 {
	s.t.Helper()
	out, err := s.q.EnqueueWorkflow(s.t.Context(), lite.Workflow{
		Steps: []lite.Step{{Name: "a", Job: lite.NewJob{Queue: "q"}}, {Name: "b", Job: lite.NewJob{Queue: "q"}}},
		Batch: &lite.Callback{Queue: "cb", Kind: "batch"},
	})
	s.is.NoErr(err)
	return out.IDs
}

// callbacks counts the batch callbacks enqueued.
func (s *restoreScene) callbacks() int {
	n, err := s.q.Unfinished(s.t.Context(), []string{"cb"})
	s.is.NoErr(err)
	return int(n)
}

// schedule sets a schedule of a keyed job every minute, fires its first
// tick and returns the job it enqueued.
func (s *restoreScene) schedule() int64 {
	s.t.Helper()
	s.is.NoErr(s.q.SetSchedule(s.t.Context(), lite.Schedule{Name: "s", Spec: "@every 1m", Job: lite.NewJob{Queue: "q", UniqueKey: "s"}}))
	s.tick(1)
	var id int64
	s.is.NoErr(s.q.DB().QueryRowContext(s.t.Context(), `select id from lite_jobs where unique_key = 's' and state = 'available'`).Scan(&id))
	return id
}

// tick moves the clock to the schedule's next tick, fires it, and checks
// how many jobs it enqueued.
func (s *restoreScene) tick(want int) {
	s.t.Helper()
	before, err := s.q.Unfinished(s.t.Context(), []string{"q"})
	s.is.NoErr(err)
	s.clock.Advance(time.Minute)
	_, err = s.q.FireSchedules(s.t.Context())
	s.is.NoErr(err)
	after, err := s.q.Unfinished(s.t.Context(), []string{"q"})
	s.is.NoErr(err)
	s.is.Equal(after-before, int64(want))
}

// TestARestoreChangesTokensNeverMeaning holds DESIGN.md's "Restores keep
// fencing": each feature behaves after FenceRestore as it does without
// it, for a pending, a running and a finished job.
func TestARestoreChangesTokensNeverMeaning(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, c := range restoreCases {
			for _, restored := range []bool{false, true} {
				name := c.name + ", without a restore"
				if restored {
					name = c.name + ", after a restore"
				}
				t.Run(name, func(t *testing.T) {
					clock := newFakeClock()
					q, _ := e.mustOpen(t, clock)
					c.run(&restoreScene{t: t, is: is.New(t), q: q, clock: clock, restored: restored})
				})
			}
		}
	})
}
