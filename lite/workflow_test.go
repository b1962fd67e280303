package lite_test

import (
	"errors"
	"strconv"
	"testing"

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
			is.NoErr(q.AckFailed(t.Context(), leaseID(t, q, a).Lease(), errors.New("boom")))
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
			is.NoErr(q.AckFailed(t.Context(), leaseID(t, q, a).Lease(), errors.New("boom")))
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

		for _, bad := range []struct {
			name  string
			steps []lite.Step
		}{
			{"a cycle", []lite.Step{{Name: "a", After: []string{"b"}}, {Name: "b", After: []string{"a"}}}},
			{"an unknown name", []lite.Step{{Name: "a"}, {Name: "b", After: []string{"c"}}}},
			{"an unknown job id", []lite.Step{{Name: "a"}, {Name: "b", Job: lite.NewJob{DependsOn: []int64{77}}}}},
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
