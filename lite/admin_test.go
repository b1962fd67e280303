package lite_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestUnknownJobID(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, nil)
		ctx := t.Context()
		_, err := q.Get(ctx, 42)
		is.True(errors.Is(err, lite.ErrNotFound))
		is.Equal(err.Error(), "get job 42: job not found")
		is.True(errors.Is(q.Cancel(ctx, 42), lite.ErrNotFound))
		is.True(errors.Is(q.Retry(ctx, 42), lite.ErrNotFound))
		_, err = q.ReleaseUnowned(ctx, 42)
		is.True(errors.Is(err, lite.ErrNotFound))
		is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: 42, Generation: 1}, nil), lite.ErrLeaseLost))
		is.Equal(countJobs(t, q), 0)
	})
}

func TestCancel(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a cancelled available job never runs", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			is.NoErr(q.Cancel(t.Context(), id))
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateCancelled)
			is.Equal(j.Generation, int64(0)) // nobody owned it
		})

		t.Run("cancelling a running job voids its lease", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.Cancel(ctx, id))
			errs, err := q.Renew(ctx, []lite.Lease{a.Lease()})
			is.NoErr(err)
			is.True(errors.Is(errs[0], lite.ErrLeaseLost)) // the worker learns to stop
			is.True(errors.Is(q.AckDone(ctx, a.Lease(), []byte("late")), lite.ErrLeaseLost))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateCancelled)
			is.Equal(j.Generation, a.Generation+1)
			is.Equal(len(j.Result), 0)
		})

		t.Run("cancelling a finished job is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckDone(t.Context(), a.Lease(), nil))
			err := q.Cancel(t.Context(), id)
			is.True(errors.Is(err, lite.ErrInvalidState))
			is.Equal(err.Error(), "cancel job 1: invalid job state: it is done, not blocked, available or running")
			is.Equal(mustGet(t, q, id).State, lite.StateDone)
		})
	})
}

func TestReleaseUnownedTakesOnlyRunningJobs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		done := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), []byte("kept")))
		waiting := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		for _, id := range []int64{done, waiting} {
			before := mustGet(t, q, id)
			_, err := q.ReleaseUnowned(ctx, id)
			is.True(errors.Is(err, lite.ErrInvalidState))
			is.Equal(mustGet(t, q, id), before) // a finished or waiting job is left as it is
		}
	})
}

func TestRetry(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a job dead at 2 of 2 starts over: two more attempts, then dead again with all four errors", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 2})
			// fail leases the job once its backoff has passed and fails the
			// attempt, returning the lease it held.
			fail := func(msg string) *lite.Job {
				clock.Advance(time.Hour)
				j := mustLeaseOne(t, q, "q")
				is.NoErr(q.AckFailed(ctx, j.Lease(), errors.New(msg)))
				return j
			}
			first := []*lite.Job{fail("one"), fail("two")}
			is.Equal(mustGet(t, q, id).State, lite.StateDead)

			clock.Advance(time.Hour)
			is.NoErr(q.Retry(ctx, id))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Attempts, 0)    // the whole budget again
			is.Equal(j.MaxAttempts, 2) // as enqueued, not raised
			is.Equal(j.RunAt, clock.Now().Local())
			is.True(j.FinishedAt.IsZero())
			is.Equal(j.Generation, first[1].Generation) // no owner changed; the next lease bumps it
			is.Equal(len(j.Errors), 2)                  // the first run's errors are kept

			second := []*lite.Job{fail("three"), fail("four")}
			is.Equal([]int{second[0].Attempts, second[1].Attempts}, []int{1, 2})
			j = mustGet(t, q, id)
			is.Equal(j.State, lite.StateDead) // two attempts, no more
			clock.Advance(time.Hour)
			jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}})
			is.NoErr(err)
			is.Equal(len(jobs), 0)

			var got []string
			runs := append(first, second...)
			for i, e := range j.Errors {
				got = append(got, fmt.Sprintf("%d/%d %s", e.Attempt, e.Generation, e.Error))
				is.Equal(e.Generation, runs[i].Generation) // each error names the lease that failed
			}
			// why: attempt numbers repeat after a retry; generations never do.
			is.Equal(got, []string{"1/1 one", "2/2 two", "1/3 three", "2/4 four"})
		})

		t.Run("a job cancelled while waiting to retry starts over the same way", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 3})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(ctx, a.Lease(), errors.New("one")))
			is.NoErr(q.Cancel(ctx, id)) // available at 1 of 3, waiting out its backoff
			is.NoErr(q.Retry(ctx, id))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.Attempts, 0) // its spent attempt is forgiven too
			is.Equal(j.MaxAttempts, 3)
			is.Equal(j.RunAt, clock.Now().Local()) // now, not when its backoff would have ended
			is.Equal(j.Generation, a.Generation)
			is.Equal(len(j.Errors), 1)
			for want := 1; want <= 3; want++ {
				b := mustLeaseOne(t, q, "q") // due at once, then after each backoff
				is.Equal(b.Attempts, want)
				is.NoErr(q.AckFailed(ctx, b.Lease(), errors.New("again")))
				clock.Advance(time.Hour)
			}
			is.Equal(mustGet(t, q, id).State, lite.StateDead)
		})

		t.Run("a job cancelled while running starts over under a new generation", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.Cancel(ctx, id))
			is.NoErr(q.Retry(ctx, id))
			b := mustLeaseOne(t, q, "q")
			is.Equal(b.Attempts, 1) // the cancelled run's attempt is not held against it
			is.Equal(b.Generation, a.Generation+2)
			is.True(errors.Is(q.AckDone(ctx, a.Lease(), nil), lite.ErrLeaseLost)) // the old run stays fenced out
			is.NoErr(q.AckDone(ctx, b.Lease(), []byte("ok")))
		})

		t.Run("a cancelled job can be retried, a running one cannot", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			is.NoErr(q.Cancel(ctx, id))
			is.NoErr(q.Retry(ctx, id))
			mustLeaseOne(t, q, "q")
			is.True(errors.Is(q.Retry(ctx, id), lite.ErrInvalidState))
			is.Equal(mustGet(t, q, id).State, lite.StateRunning)
		})
	})
}

func TestRetryOfAJobWhoseKeyIsHeldAgain(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		first := mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: "k", MaxAttempts: 1})
		is.NoErr(q.AckFailed(ctx, mustLeaseOne(t, q, "q").Lease(), errors.New("no")))
		holder := mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: "k"}) // the key was free
		before := mustGet(t, q, first)

		err := q.Retry(ctx, first)
		is.True(errors.Is(err, lite.ErrDuplicate))
		is.Equal(err.Error(), fmt.Sprintf(`retry job %d: key "k" held by job %d: duplicate unique key`, first, holder))
		is.Equal(mustGet(t, q, first), before) // still dead, as it was
	})
}

func TestPurge(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		done := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), nil))
		dead := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
		is.NoErr(q.AckFailed(ctx, mustLeaseOne(t, q, "q").Lease(), errors.New("x")))
		clock.Advance(time.Hour)
		recent := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), nil))
		waiting := mustEnqueue(t, q, lite.NewJob{Queue: "q"})

		_, err := q.Purge(ctx, clock.Now(), lite.StateAvailable)
		is.True(err != nil) // only finished jobs can be purged
		n, err := q.Purge(ctx, clock.Now(), lite.StateDone)
		is.NoErr(err)
		is.Equal(n, int64(1))
		_, err = q.Get(ctx, done)
		is.True(errors.Is(err, lite.ErrNotFound))
		is.Equal(mustGet(t, q, dead).State, lite.StateDead)   // another state
		is.Equal(mustGet(t, q, recent).State, lite.StateDone) // too recent
		is.Equal(mustGet(t, q, waiting).State, lite.StateAvailable)
	})
}

func TestListAndStats(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		for range 5 {
			mustEnqueue(t, q, lite.NewJob{Queue: "mail", Kind: "send"})
		}
		mustEnqueue(t, q, lite.NewJob{Queue: "img", Kind: "resize"})
		mustEnqueue(t, q, lite.NewJob{Queue: "img", Kind: "resize", Delay: time.Hour})
		a := mustLeaseOne(t, q, "mail")
		is.NoErr(q.AckDone(ctx, a.Lease(), nil))
		mustLeaseOne(t, q, "mail")
		clock.Advance(90 * time.Second)

		page, err := q.List(ctx, lite.ListFilter{Queue: "mail", State: lite.StateAvailable, Limit: 2})
		is.NoErr(err)
		is.Equal(len(page), 2)
		next, err := q.List(ctx, lite.ListFilter{Queue: "mail", State: lite.StateAvailable, Limit: 2, AfterID: page[1].ID})
		is.NoErr(err)
		is.Equal(len(next), 1)
		is.True(next[0].ID > page[1].ID)
		byKind, err := q.List(ctx, lite.ListFilter{Kind: "resize"})
		is.NoErr(err)
		is.Equal(len(byKind), 2)
		_, err = q.List(ctx, lite.ListFilter{State: "bogus"})
		is.True(err != nil)

		stats, err := q.Stats(ctx)
		is.NoErr(err)
		is.Equal(len(stats), 2)
		is.Equal(stats[0].Queue, "img")
		is.Equal(stats[0].Counts, map[lite.State]int64{lite.StateAvailable: 2})
		is.Equal(stats[0].OldestReady, 90*time.Second) // the delayed one is not ready
		is.Equal(stats[1].Queue, "mail")
		is.Equal(stats[1].Counts, map[lite.State]int64{lite.StateAvailable: 3, lite.StateRunning: 1, lite.StateDone: 1})
	})
}

func TestTheErrorsLogKeepsTheLatestHundredEntries(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{})
		// A release refunds its attempt, so nothing else bounds how often
		// a job can be released, and each release is logged.
		for range 130 {
			mustLeaseOne(t, q, lite.DefaultQueue)
			_, err := q.ReleaseUnowned(t.Context(), id)
			is.NoErr(err)
		}
		j := mustGet(t, q, id)
		is.Equal(len(j.Errors), 100)
		is.Equal(j.Errors[0].Generation, int64(2*30+1)) // the 31st release's: the first 30 were dropped
		is.Equal(j.Errors[99].Generation, int64(2*129+1))
	})
}

func TestAFailureWhoseTextHoldsNULIsRecorded(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{})
		j := mustLeaseOne(t, q, lite.DefaultQueue)
		is.NoErr(q.AckFailed(t.Context(), j.Lease(), errors.New("bad\x00nul"))) // a command's stderr may hold one
		is.Equal(mustGet(t, q, id).Errors[0].Error, "bad\uFFFDnul")
	})
}

func TestListNewestFirstPagesDown(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		var ids []int64
		for range 5 {
			ids = append(ids, mustEnqueue(t, q, lite.NewJob{Queue: "mail"}))
		}
		page := func(f lite.ListFilter) []int64 {
			t.Helper()
			jobs, err := q.List(ctx, f)
			is.NoErr(err)
			var got []int64
			for _, j := range jobs {
				got = append(got, j.ID)
			}
			return got
		}
		is.Equal(page(lite.ListFilter{Newest: true, Limit: 2}), []int64{ids[4], ids[3]})
		is.Equal(page(lite.ListFilter{Newest: true, BeforeID: ids[3], Limit: 2}), []int64{ids[2], ids[1]})
		is.Equal(page(lite.ListFilter{Newest: true, BeforeID: ids[1], Limit: 2}), []int64{ids[0]})
		is.Equal(page(lite.ListFilter{AfterID: ids[2], Limit: 2}), []int64{ids[3], ids[4]}) // id order is still there

		// The lease takes the oldest first: jobs 0 and 1 run.
		leased, err := q.Lease(ctx, lite.LeaseRequest{Max: 2})
		is.NoErr(err)
		is.Equal(len(leased), 2)
		is.Equal(page(lite.ListFilter{State: lite.StateRunning, Newest: true}), []int64{ids[1], ids[0]})
		is.Equal(page(lite.ListFilter{State: lite.StateRunning, Newest: true, BeforeID: ids[1]}), []int64{ids[0]})
		is.Equal(page(lite.ListFilter{State: lite.StateRunning}), []int64{ids[0], ids[1]})
		is.Equal(page(lite.ListFilter{State: lite.StateAvailable, Newest: true}), []int64{ids[4], ids[3], ids[2]})

		for _, f := range []lite.ListFilter{
			{Newest: true, AfterID: 1},
			{BeforeID: 1},
			{Newest: true, BeforeID: -1},
		} {
			_, err := q.List(ctx, f)
			is.True(err != nil) // each paging mixed up is refused
		}
	})
}

func TestListingRunningJobsShowsThemAlone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		mustEnqueue(t, q, lite.NewJob{Queue: "mail"}) // done below
		running := mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
		mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
		mustEnqueue(t, q, lite.NewJob{Queue: "img"})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "mail").Lease(), nil))
		is.Equal(mustLeaseOne(t, q, "mail").ID, running)
		for _, newest := range []bool{false, true} {
			jobs, err := q.List(ctx, lite.ListFilter{State: lite.StateRunning, Newest: newest})
			is.NoErr(err)
			is.Equal(len(jobs), 1) // neither the done job nor the available ones
			is.Equal(jobs[0].ID, running)
		}
	})
}

func TestListCanOmitPayloadsAndResults(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "mail", Payload: []byte(`{"big":"payload"}`)})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "mail").Lease(), []byte("a result")))
		for _, newest := range []bool{false, true} {
			jobs, err := q.List(ctx, lite.ListFilter{OmitBodies: true, Newest: newest})
			is.NoErr(err)
			is.Equal(len(jobs), 1)
			is.Equal(jobs[0].ID, id)
			is.Equal(len(jobs[0].Payload), 0)
			is.Equal(len(jobs[0].Result), 0)
			is.Equal(jobs[0].State, lite.StateDone) // the other fields are there
		}
		jobs, err := q.List(ctx, lite.ListFilter{})
		is.NoErr(err)
		is.Equal(string(jobs[0].Payload), `{"big":"payload"}`)
		is.Equal(string(jobs[0].Result), "a result")
	})
}

func TestPurgeDeletesInBatchesThatLetOtherWritersCommit(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		finishMany(t, q, 401, 10)
		clock.Advance(time.Second)
		// Another process, which waits for the write lock no more than a
		// millisecond: it commits between batches, or fails.
		other := mustOpenOpts(t, dsn, lite.Options{BusyTimeout: time.Millisecond})
		batches := 0
		lite.SetAfterBatch(q, func() {
			batches++
			_, err := other.Enqueue(t.Context(), lite.NewJob{Queue: "other"})
			is.NoErr(err) // the write lock is free between batches
		})
		n, err := q.Purge(t.Context(), clock.Now(), lite.StateDone)
		is.NoErr(err)
		is.Equal(n, int64(401))
		// why: the first statement deletes 200 at most; the next, sized
		// by the first's time, up to 400 (or 200 again on a slow host).
		is.True(batches == 2 || batches == 3)
		st, err := q.Stats(t.Context())
		is.NoErr(err)
		is.Equal(len(st), 1) // only the other process's jobs are left
		is.Equal(st[0].Queue, "other")
		is.Equal(st[0].Counts[lite.StateAvailable], int64(batches))
	})
}
