package lite_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// leaseID leases the one available job of the default queue and checks
// that it is id.
func leaseID(tb testing.TB, q *lite.Queue, id int64) *lite.Job {
	tb.Helper()
	j := mustLeaseOne(tb, q, lite.DefaultQueue)
	if j.ID != id {
		tb.Fatalf("leased job %d, want %d", j.ID, id)
	}
	return j
}

func mustDone(tb testing.TB, q *lite.Queue, j *lite.Job, result string) {
	tb.Helper()
	if err := q.AckDone(tb.Context(), j.Lease(), []byte(result)); err != nil {
		tb.Fatalf("ack done: %v", err)
	}
}

// mustDie leases id, the one available job, and fails its attempt, its
// last: the job is dead.
func mustDie(tb testing.TB, q *lite.Queue, id int64) {
	tb.Helper()
	if err := q.AckFailed(tb.Context(), leaseID(tb, q, id).Lease(), errors.New("boom")); err != nil {
		tb.Fatalf("ack failed: %v", err)
	}
}

func stateOf(tb testing.TB, q *lite.Queue, id int64) lite.State {
	tb.Helper()
	return mustGet(tb, q, id).State
}

// jobsOfKind lists the jobs of kind, as a callback's count is read.
func jobsOfKind(tb testing.TB, q *lite.Queue, kind string) []*lite.Job {
	tb.Helper()
	jobs, err := q.List(tb.Context(), lite.ListFilter{Kind: kind})
	if err != nil {
		tb.Fatalf("list: %v", err)
	}
	return jobs
}

func TestADependentRunsOnceItsDependenciesAreDone(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a dependent is blocked until the last of its dependencies is done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{Kind: "a"})
			b := mustEnqueue(t, q, lite.NewJob{Kind: "b"})
			c := mustEnqueue(t, q, lite.NewJob{Kind: "c", DependsOn: []int64{a, b}})
			is.Equal(stateOf(t, q, c), lite.StateBlocked)
			ja := leaseID(t, q, a)
			is.Equal(stateOf(t, q, c), lite.StateBlocked) // a lease of a dependency counts nothing
			mustDone(t, q, ja, "ra")
			is.Equal(stateOf(t, q, c), lite.StateBlocked) // b is not done yet
			mustDone(t, q, leaseID(t, q, b), "rb")
			is.Equal(stateOf(t, q, c), lite.StateAvailable)
			deps, err := q.Dependencies(t.Context(), leaseID(t, q, c).ID)
			is.NoErr(err)
			is.Equal(len(deps), 2)
			is.Equal(string(deps[0].Result), "ra") // a handler reads what its dependencies returned
			is.Equal(string(deps[1].Result), "rb")
			waiting, err := q.Dependents(t.Context(), a)
			is.NoErr(err)
			is.Equal(len(waiting), 1)
			is.Equal(waiting[0].ID, c)
		})

		t.Run("a stale ack of a dependency unblocks nothing and calls back nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{Callback: &lite.Callback{Kind: "called"}})
			c := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			stale := leaseID(t, q, a)
			_, err := q.ReleaseUnowned(t.Context(), a)
			is.NoErr(err)
			current := leaseID(t, q, a)
			err = q.AckDone(t.Context(), stale.Lease(), nil)
			is.True(errors.Is(err, lite.ErrLeaseLost))
			is.Equal(stateOf(t, q, c), lite.StateBlocked) // the stale ack unblocked nothing
			is.Equal(len(jobsOfKind(t, q, "called")), 0)  // and called nothing back
			mustDone(t, q, current, "")                   // the current lease's ack does both
			is.Equal(stateOf(t, q, c), lite.StateAvailable)
			is.Equal(len(jobsOfKind(t, q, "called")), 1)
		})

		t.Run("jobs of a batch insert wait and call back as one enqueued alone does", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			out, err := q.EnqueueBatch(t.Context(), []lite.NewJob{
				{Kind: "after", DependsOn: []int64{a}},
				{Kind: "plain", Callback: &lite.Callback{Queue: "app", Kind: "called"}},
			})
			is.NoErr(err)
			is.Equal(stateOf(t, q, out[0].ID), lite.StateBlocked)
			is.NoErr(q.Cancel(t.Context(), out[1].ID))
			is.Equal(len(jobsOfKind(t, q, "called")), 1)
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, out[0].ID), lite.StateAvailable)
		})

		t.Run("a dependency already done counts as done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			mustDone(t, q, leaseID(t, q, a), "")
			c := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			is.Equal(stateOf(t, q, c), lite.StateAvailable)
		})

		t.Run("an unknown dependency is refused and nothing is stored", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			_, err := q.Enqueue(t.Context(), lite.NewJob{DependsOn: []int64{999}})
			is.True(errors.Is(err, lite.ErrNotFound))
			jobs, err := q.List(t.Context(), lite.ListFilter{})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
		})

		t.Run("a unique key on a job that waits is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			_, err := q.Enqueue(t.Context(), lite.NewJob{UniqueKey: "k", DependsOn: []int64{a}})
			is.True(err != nil) // it could not become available while another job held the key
		})

		t.Run("a cancelled dependent stays cancelled when its dependency is done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			c := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			is.NoErr(q.Cancel(t.Context(), c))
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, c), lite.StateCancelled)
		})
	})
}

func TestADependencyThatFailsAppliesTheDependentsPolicy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("cancel cascades down the graph, and each cancelled job calls back", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}, Callback: &lite.Callback{Kind: "called"}})
			c := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{b}, Callback: &lite.Callback{Kind: "called"}})
			run := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{c}, OnDependencyFailure: lite.DependencyRun})
			stay := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{c}, OnDependencyFailure: lite.DependencyBlock})
			mustDie(t, q, a)
			is.Equal(stateOf(t, q, a), lite.StateDead)
			is.Equal(stateOf(t, q, b), lite.StateCancelled)
			is.Equal(stateOf(t, q, c), lite.StateCancelled) // two levels down
			is.Equal(stateOf(t, q, run), lite.StateAvailable)
			is.Equal(stateOf(t, q, stay), lite.StateBlocked)
			is.Equal(len(jobsOfKind(t, q, "called")), 2)
		})

		t.Run("a job left blocked runs once its dependency is retried and done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			stay := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}, OnDependencyFailure: lite.DependencyBlock})
			mustDie(t, q, a)
			is.Equal(stateOf(t, q, stay), lite.StateBlocked)
			is.NoErr(q.Retry(t.Context(), a))
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, stay), lite.StateAvailable)
		})

		t.Run("a dependency already dead refuses a dependent that would cancel", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			is.NoErr(q.Cancel(t.Context(), a))
			_, err := q.Enqueue(t.Context(), lite.NewJob{DependsOn: []int64{a}})
			is.True(errors.Is(err, lite.ErrInvalidState))
			id := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}, OnDependencyFailure: lite.DependencyRun})
			is.Equal(stateOf(t, q, id), lite.StateAvailable)
		})
	})
}

func TestARetriedDependentWaitsAgainForItsDependencies(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a cancelled dependent, once retried, is blocked until its dependency is done", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			is.NoErr(q.Cancel(t.Context(), b))
			is.NoErr(q.Retry(t.Context(), b))
			is.Equal(stateOf(t, q, b), lite.StateBlocked)
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, b), lite.StateAvailable)
		})

		t.Run("a bulk retry of a cancelled chain runs it in its order", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			c := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{b}})
			mustDie(t, q, a)
			is.Equal(stateOf(t, q, c), lite.StateCancelled)
			n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{})
			is.NoErr(err)
			is.Equal(n, int64(3))
			is.Equal(stateOf(t, q, b), lite.StateBlocked)
			is.Equal(stateOf(t, q, c), lite.StateBlocked)
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, c), lite.StateBlocked)
			mustDone(t, q, leaseID(t, q, b), "")
			mustDone(t, q, leaseID(t, q, c), "")
		})

		t.Run("a dependent retried before its dead dependency waits for that one's retry", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			mustDie(t, q, a)
			is.NoErr(q.Retry(t.Context(), b))
			is.Equal(stateOf(t, q, b), lite.StateBlocked)
			is.NoErr(q.Retry(t.Context(), a))
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, b), lite.StateAvailable)
		})

		t.Run("a dependent that runs anyway is available again after its dependency died", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}, OnDependencyFailure: lite.DependencyRun})
			mustDie(t, q, a)
			is.NoErr(q.Cancel(t.Context(), b))
			is.NoErr(q.Retry(t.Context(), b))
			is.Equal(stateOf(t, q, b), lite.StateAvailable)
		})

		t.Run("a refused retry of a waiting job leaves its count as it was", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			c := mustEnqueue(t, q, lite.NewJob{Delay: time.Hour})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a, c}, OnDependencyFailure: lite.DependencyRun})
			mustDie(t, q, a)
			is.True(errors.Is(q.Retry(t.Context(), b), lite.ErrInvalidState))
			is.NoErr(q.Retry(t.Context(), a))
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, b), lite.StateBlocked) // c is not done yet
		})
	})
}

func TestAJobABlockedJobWaitsForIsNeverDeleted(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a bulk delete skips a dependency until its dependent is cancelled", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			n, err := q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{States: []lite.State{lite.StateAvailable}})
			is.NoErr(err)
			is.Equal(n, int64(0))
			is.Equal(stateOf(t, q, a), lite.StateAvailable)
			is.NoErr(q.Cancel(t.Context(), b))
			n, err = q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{States: []lite.State{lite.StateAvailable}})
			is.NoErr(err)
			is.Equal(n, int64(1))
		})

		t.Run("a purge keeps a dead dependency that a job left blocked waits for", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			stay := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}, OnDependencyFailure: lite.DependencyBlock})
			other := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
			mustDie(t, q, a)
			mustDie(t, q, other)
			n, err := q.Purge(t.Context(), time.Now().Add(100*365*24*time.Hour), lite.StateDead)
			is.NoErr(err)
			is.Equal(n, int64(1)) // other only
			is.NoErr(q.Retry(t.Context(), a))
			mustDone(t, q, leaseID(t, q, a), "")
			is.Equal(stateOf(t, q, stay), lite.StateAvailable)
		})

		t.Run("a done dependency already counted is kept while its dependent waits for another", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			a := mustEnqueue(t, q, lite.NewJob{})
			c := mustEnqueue(t, q, lite.NewJob{Delay: time.Hour})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a, c}})
			mustDone(t, q, leaseID(t, q, a), "ra")
			n, err := q.Purge(t.Context(), time.Now().Add(100*365*24*time.Hour), lite.StateDone)
			is.NoErr(err)
			is.Equal(n, int64(0)) // b, once c is done, reads a's result
			is.Equal(stateOf(t, q, b), lite.StateBlocked)
		})
	})
}

func TestAWorkflowIsEnqueuedWhole(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a diamond runs each step after the steps it waits for", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
				{Name: "join", Job: lite.NewJob{Kind: "join"}, After: []string{"left", "right"}},
				{Name: "left", Job: lite.NewJob{Kind: "left"}, After: []string{"top"}},
				{Name: "right", Job: lite.NewJob{Kind: "right"}, After: []string{"top"}},
				{Name: "top", Job: lite.NewJob{Kind: "top"}},
			}})
			is.NoErr(err)
			join, left, right, top := wf.IDs[0], wf.IDs[1], wf.IDs[2], wf.IDs[3]
			is.Equal(stateOf(t, q, join), lite.StateBlocked)
			is.Equal(stateOf(t, q, left), lite.StateBlocked)
			mustDone(t, q, leaseID(t, q, top), "")
			is.Equal(stateOf(t, q, left), lite.StateAvailable)
			is.Equal(stateOf(t, q, right), lite.StateAvailable)
			mustDone(t, q, leaseID(t, q, left), "")
			is.Equal(stateOf(t, q, join), lite.StateBlocked)
			mustDone(t, q, leaseID(t, q, right), "")
			is.Equal(stateOf(t, q, join), lite.StateAvailable)
		})

		t.Run("a step that names a step twice waits for it once", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, fast)
			wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
				{Name: "a", Job: lite.NewJob{Kind: "a"}},
				{Name: "b", Job: lite.NewJob{Kind: "b"}, After: []string{"a", "a"}},
			}})
			is.NoErr(err)
			mustDone(t, q, leaseID(t, q, wf.IDs[0]), "")
			is.Equal(stateOf(t, q, wf.IDs[1]), lite.StateAvailable)
		})

		for _, bad := range []struct {
			name  string
			steps []lite.Step
		}{
			{"a cycle", []lite.Step{{Name: "a", After: []string{"b"}}, {Name: "b", After: []string{"a"}}}},
			{"an unknown name", []lite.Step{{Name: "a"}, {Name: "b", After: []string{"c"}}}},
			{"an unknown job id", []lite.Step{{Name: "a"}, {Name: "b", Job: lite.NewJob{DependsOn: []int64{77}}}}},
			{"a unique key on a step that waits", []lite.Step{{Name: "a"}, {Name: "b", Job: lite.NewJob{UniqueKey: "k"}, After: []string{"a"}}}},
		} {
			t.Run(bad.name+" is refused and nothing is stored", func(t *testing.T) {
				is := is.New(t)
				q, _ := e.open(t, fast)
				_, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: bad.steps})
				is.True(err != nil)
				jobs, err := q.List(t.Context(), lite.ListFilter{})
				is.NoErr(err)
				is.Equal(len(jobs), 0)
			})
		}
	})
}

func TestABatchCallsBackOnceWithItsCounts(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.open(t, fast)
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{
			Steps: []lite.Step{{Job: lite.NewJob{Kind: "part"}}, {Job: lite.NewJob{Kind: "part", MaxAttempts: 1}}, {Job: lite.NewJob{Kind: "part"}}},
			Batch: &lite.Callback{Queue: "reports", Kind: "report", Payload: []byte("all in")},
		})
		is.NoErr(err)
		mustDone(t, q, leaseID(t, q, wf.IDs[0]), "")
		is.NoErr(q.AckFailed(t.Context(), leaseID(t, q, wf.IDs[1]).Lease(), errors.New("boom")))
		b, err := q.GetBatch(t.Context(), wf.Batch)
		is.NoErr(err)
		is.Equal([]int{b.Done, b.Dead, b.Pending()}, []int{1, 1, 1})
		is.Equal(len(jobsOfKind(t, q, "report")), 0)
		is.NoErr(q.Cancel(t.Context(), wf.IDs[2]))
		reports := jobsOfKind(t, q, "report")
		is.Equal(len(reports), 1)
		is.Equal(string(reports[0].Payload), "all in")
		is.Equal(reports[0].Meta["lite.batch"], strconv.FormatInt(wf.Batch, 10))
		is.Equal([]string{reports[0].Meta["lite.done"], reports[0].Meta["lite.dead"], reports[0].Meta["lite.cancelled"]}, []string{"1", "1", "1"})

		is.NoErr(q.Retry(t.Context(), wf.IDs[1])) // a member retried and ending again
		mustDone(t, q, leaseID(t, q, wf.IDs[1]), "")
		is.Equal(len(jobsOfKind(t, q, "report")), 1) // calls back no second time
		b, err = q.GetBatch(t.Context(), wf.Batch)
		is.NoErr(err)
		is.Equal([]int{b.Done, b.Dead, b.Cancelled, b.Pending()}, []int{2, 0, 1, 0})
	})
}

func TestACallbackFiresOnceForEachWayAJobEnds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ends := []struct {
			name  string
			state lite.State
			end   func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64)
		}{
			{"its worker's ack", lite.StateDone, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				mustDone(t, q, leaseID(t, q, id), "")
			}},
			{"a group commit's ack", lite.StateDone, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				errs, err := q.AckDoneMany(t.Context(), []lite.Done{{Lease: leaseID(t, q, id).Lease()}})
				is.New(t).NoErr(errors.Join(append(errs, err)...))
			}},
			{"Complete with writes", lite.StateDone, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				is.New(t).NoErr(q.Complete(t.Context(), leaseID(t, q, id).Lease(), nil, nil))
			}},
			{"a failure that spends the last attempt", lite.StateDead, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				is.New(t).NoErr(q.AckFailed(t.Context(), leaseID(t, q, id).Lease(), errors.New("boom")))
			}},
			{"an admin's cancel", lite.StateCancelled, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				is.New(t).NoErr(q.Cancel(t.Context(), id))
			}},
			{"a bulk cancel of a running job", lite.StateCancelled, func(t *testing.T, q *lite.Queue, _ *fakeClock, id int64) {
				leaseID(t, q, id)
				n, err := q.Bulk(t.Context(), lite.BulkCancel, lite.Filter{IDs: []int64{id}})
				is.New(t).NoErr(err)
				is.New(t).Equal(n, int64(1))
			}},
			{"a reclaim that spends the last attempt", lite.StateDead, func(t *testing.T, q *lite.Queue, clock *fakeClock, id int64) {
				leaseID(t, q, id)
				clock.Advance(staleAfter + time.Second)
				got, err := q.ReclaimOrphaned(t.Context())
				is.New(t).NoErr(err)
				is.New(t).Equal(len(got), 1)
			}},
		}
		for _, end := range ends {
			t.Run("the callback of a job ended by "+end.name+" is enqueued once", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1, Callback: &lite.Callback{Queue: "app", Kind: "ended", Payload: []byte("row 7")}})
				end.end(t, q, clock, id)
				is.Equal(stateOf(t, q, id), end.state)
				called := jobsOfKind(t, q, "ended")
				is.Equal(len(called), 1)
				is.Equal(called[0].Queue, "app")
				is.Equal(string(called[0].Payload), "row 7")
				is.Equal(called[0].Meta["lite.job"], strconv.FormatInt(id, 10))
				is.Equal(called[0].Meta["lite.state"], string(end.state))
			})
		}

		t.Run("a failure with attempts left and a reclaim with attempts left call back nothing", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 3, Callback: &lite.Callback{Queue: "app", Kind: "ended"}})
			mustDie(t, q, id)
			clock.Advance(2 * time.Hour) // past the backoff
			leaseID(t, q, id)
			clock.Advance(staleAfter + time.Second)
			_, err := q.ReclaimOrphaned(t.Context())
			is.NoErr(err)
			is.Equal(stateOf(t, q, id), lite.StateAvailable)
			is.Equal(len(jobsOfKind(t, q, "ended")), 0)
		})
	})
}

// TestManyHostsAckingAtOnceCountEveryEnd acks a batch's jobs, all of which
// one job waits for, from several queue handles at once (on PostgreSQL,
// sessions of their own): the batch counts every end, calls back once,
// and the job waiting for them all becomes available once.
func TestManyHostsAckingAtOnceCountEveryEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, dsn := e.open(t, fast)
		const jobs, hosts = 200, 4
		steps := make([]lite.Step, jobs)
		for i := range steps {
			steps[i] = lite.Step{Job: lite.NewJob{Queue: "work"}}
		}
		wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: steps, Batch: &lite.Callback{Queue: "reports", Kind: "report"}})
		is.NoErr(err)
		join := mustEnqueue(t, q, lite.NewJob{Queue: "join", Kind: "join", DependsOn: wf.IDs})
		errs := make(chan error, hosts)
		for range hosts {
			h := mustOpenOpts(t, dsn, fast)
			go func() {
				for {
					leased, err := h.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"work"}, Max: 3})
					if err != nil || len(leased) == 0 {
						errs <- err
						return
					}
					for _, j := range leased {
						if err := h.AckDone(t.Context(), j.Lease(), nil); err != nil && !errors.Is(err, lite.ErrBusy) {
							errs <- err
							return
						}
					}
				}
			}()
		}
		for range hosts {
			is.NoErr(<-errs)
		}
		b, err := q.GetBatch(t.Context(), wf.Batch)
		is.NoErr(err)
		is.Equal(b.Done, jobs) // no end lost
		is.Equal(len(jobsOfKind(t, q, "report")), 1)
		is.Equal(stateOf(t, q, join), lite.StateAvailable)
		links, err := q.Links(t.Context(), join)
		is.NoErr(err)
		is.Equal(links.Pending, 0) // every dependency counted once
	})
}

// TestAJobEnqueuedWhileItsDependencyIsAckedIsNeverLeftBlocked enqueues a
// job waiting for another while a second handle acks that other: the
// enqueue either sees it done or leaves an edge that its ack counts, never
// neither.
func TestAJobEnqueuedWhileItsDependencyIsAckedIsNeverLeftBlocked(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, dsn := e.open(t, fast)
		acker := mustOpenOpts(t, dsn, fast)
		for range scaled(100) {
			dep := mustEnqueue(t, q, lite.NewJob{})
			l := leaseID(t, q, dep)
			acked := make(chan error, 1)
			go func() { acked <- acker.AckDone(t.Context(), l.Lease(), nil) }()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "after", DependsOn: []int64{dep}})
			is.NoErr(<-acked)
			is.Equal(stateOf(t, q, id), lite.StateAvailable) // its dependency is done
		}
	})
}

// TestADependencysEndCascadesToWhatCommittedWhileItWaited ends J dead
// while another transaction, holding a row J's cascade of cancels needs,
// changes what the cascade reaches: an enqueue of a job M that waits for
// K (J's blocked dependent), or a retry of a cancelled L (blocked again
// behind K) that M waits for. On PostgreSQL the trigger chose the jobs to
// cancel in one statement, from before its wait: M stayed blocked for
// good behind a cancelled job.
func TestADependencysEndCascadesToWhatCommittedWhileItWaited(t *testing.T) {
	e := onPostgres(t)
	ending := func(t *testing.T, q *lite.Queue, j int64) (end func() error) {
		lease := leaseID(t, q, j).Lease()
		done := make(chan error, 1)
		go func() { done <- q.AckFailed(t.Context(), lease, lite.Permanent(errors.New("boom"))) }()
		return func() error { return <-done }
	}
	t.Run("a dependent enqueued meanwhile", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.open(t, fast)
		j := mustEnqueue(t, q, lite.NewJob{})
		k := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{j}})
		app, pid := appTx(t, q)
		m, err := q.EnqueueTx(ctx, app, lite.NewJob{DependsOn: []int64{k}})
		is.NoErr(err)
		end := ending(t, q, j)
		waitUntilBlockedBy(t, q, pid)
		is.NoErr(app.Commit())
		is.NoErr(end())
		is.Equal(stateOf(t, q, k), lite.StateCancelled)
		is.Equal(stateOf(t, q, m), lite.StateCancelled) // K ended cancelled: M, which cancels, too
	})
	t.Run("a dependency retried meanwhile", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.open(t, fast)
		j := mustEnqueue(t, q, lite.NewJob{})
		k := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{j}})
		l := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{k}})
		m := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{l}})
		is.NoErr(q.Cancel(ctx, l)) // and M with it
		is.NoErr(q.Retry(ctx, m))  // blocked again, behind L
		is.Equal(stateOf(t, q, m), lite.StateBlocked)
		// Retry's writes for L, by hand, its commit held: L blocked again
		// behind K, its edge from K open.
		app, pid := appTx(t, q)
		_, err := app.ExecContext(ctx, `update lite_deps set resolved = 0 where job_id = $1`, l)
		is.NoErr(err)
		_, err = app.ExecContext(ctx, `update lite_jobs set state = 'blocked', deps_pending = 1, finished_at = null where id = $1`, l)
		is.NoErr(err)
		end := ending(t, q, j)
		waitUntilBlockedBy(t, q, pid)
		is.NoErr(app.Commit())
		is.NoErr(end())
		is.Equal(stateOf(t, q, l), lite.StateCancelled)
		is.Equal(stateOf(t, q, m), lite.StateCancelled) // L ended cancelled again: M too
	})
}
