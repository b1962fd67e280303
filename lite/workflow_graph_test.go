package lite_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// diamond enqueues fetch, small and large after it, publish after both,
// and audit after publish, and returns their ids in that order.
func diamond(t *testing.T, q *lite.Queue) []int64 {
	t.Helper()
	wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
		{Name: "fetch", Job: lite.NewJob{Kind: "fetch"}},
		{Name: "small", Job: lite.NewJob{Kind: "resize"}, After: []string{"fetch"}},
		{Name: "large", Job: lite.NewJob{Kind: "resize"}, After: []string{"fetch"}},
		{Name: "publish", Job: lite.NewJob{Queue: "web", Kind: "publish"}, After: []string{"small", "large"}},
		{Job: lite.NewJob{Kind: "audit"}, After: []string{"publish"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return wf.IDs
}

// graphIDs are the ids of g's jobs, in g's order.
func graphIDs(g lite.Graph) []int64 {
	ids := make([]int64, len(g.Jobs))
	for i, j := range g.Jobs {
		ids[i] = j.ID
	}
	return ids
}

func TestAGraphIsEveryJobConnectedThroughDependencies(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.open(t, fast)
		ctx := t.Context()
		lonely := mustEnqueue(t, q, lite.NewJob{Kind: "lonely"})
		ids := diamond(t, q)
		fetch, small, large, publish, audit := ids[0], ids[1], ids[2], ids[3], ids[4]
		diamond(t, q) // another graph, apart
		mustDone(t, q, leaseID(t, q, lonely), "")
		mustDone(t, q, leaseID(t, q, fetch), "")

		t.Run("from any of its jobs, both ways, in layers", func(t *testing.T) {
			is := is.New(t)
			for _, from := range ids {
				g, err := q.Graph(ctx, from, 0)
				is.NoErr(err)
				is.Equal(graphIDs(g), ids) // fetch, small and large, publish, audit: by layer, then id
				is.True(!g.Truncated)
				is.Equal(g.Jobs[3], lite.GraphJob{ID: publish, Queue: "web", Kind: "publish", State: lite.StateBlocked,
					WaitsFor: []int64{small, large}, Layer: 2})
			}
			g, err := q.Graph(ctx, small, 0)
			is.NoErr(err)
			layers := make([]int, len(g.Jobs))
			for i, j := range g.Jobs {
				layers[i] = j.Layer
			}
			is.Equal(layers, []int{0, 1, 1, 2, 3})
			is.Equal(g.Jobs[0].State, lite.StateDone)
			is.Equal(len(g.Jobs[0].WaitsFor), 0)
			is.Equal(g.Jobs[1].State, lite.StateAvailable) // its dependency is done
			is.Equal(g.Jobs[4].WaitsFor, []int64{publish})
		})

		t.Run("a job without dependencies is a graph of its own", func(t *testing.T) {
			is := is.New(t)
			g, err := q.Graph(ctx, lonely, 0)
			is.NoErr(err)
			is.Equal(graphIDs(g), []int64{lonely})
			is.Equal(len(g.Jobs[0].WaitsFor), 0)
			is.True(!g.Truncated)
		})

		t.Run("a limit keeps the nearest jobs and says the graph is truncated", func(t *testing.T) {
			is := is.New(t)
			g, err := q.Graph(ctx, audit, 2)
			is.NoErr(err)
			is.Equal(graphIDs(g), []int64{publish, audit}) // publish is audit's one neighbour
			is.True(g.Truncated)
			is.True(g.Jobs[0].More)  // publish waits for small and large, left out
			is.True(!g.Jobs[1].More) // audit has all of its edges
			is.Equal(len(g.Jobs[0].WaitsFor), 0)
			is.Equal(g.Jobs[0].Layer, 0) // of the graph shown
			g, err = q.Graph(ctx, fetch, 1)
			is.NoErr(err)
			is.Equal(graphIDs(g), []int64{fetch})
			is.True(g.Truncated && g.Jobs[0].More) // the jobs that wait for it are left out
			g, err = q.Graph(ctx, audit, 5)
			is.NoErr(err)
			is.True(!g.Truncated) // exactly the limit is whole
		})

		t.Run("an unknown job or a negative limit is refused", func(t *testing.T) {
			is := is.New(t)
			_, err := q.Graph(ctx, 999, 0)
			is.True(errors.Is(err, lite.ErrNotFound))
			_, err = q.Graph(ctx, fetch, -1)
			is.True(err != nil)
		})

		t.Run("its JSON lists every job with its edges", func(t *testing.T) {
			is := is.New(t)
			g, err := q.Graph(ctx, lonely, 0)
			is.NoErr(err)
			text, err := json.Marshal(g)
			is.NoErr(err)
			is.Equal(string(text), fmt.Sprintf(`{"jobs":[{"id":%d,"queue":"default","kind":"lonely","state":"done","waits_for":[],"layer":0,"more":false}],"truncated":false}`, lonely))
		})
	})
}

func TestAGraphLeavesOutAPurgedJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ids := diamond(t, q)
		for _, id := range ids[:3] {
			mustDone(t, q, leaseID(t, q, id), "")
		}
		clock.Advance(time.Hour)
		// Only fetch goes: small and large stay while publish, which
		// waits for them, has not finished.
		n, err := q.Purge(t.Context(), clock.Now(), lite.StateDone)
		is.NoErr(err)
		is.Equal(n, int64(1))
		g, err := q.Graph(t.Context(), ids[4], 0)
		is.NoErr(err)
		got := graphIDs(g)
		slices.Sort(got)
		is.Equal(got, ids[1:])
		for _, j := range g.Jobs {
			if j.ID == ids[1] || j.ID == ids[2] {
				is.Equal(len(j.WaitsFor), 0) // their edges to the purged job are gone with it
			}
		}
		is.True(!g.Truncated)
	})
}

func TestListPagesABatchsJobs(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.open(t, fast)
		ctx := t.Context()
		batch := func(n int) lite.WorkflowIDs {
			steps := make([]lite.Step, n)
			for i := range steps {
				steps[i].Job = lite.NewJob{Kind: "convert", MaxAttempts: 1}
			}
			wf, err := q.EnqueueWorkflow(ctx, lite.Workflow{Steps: steps, Batch: &lite.Callback{Kind: "report", Payload: []byte("q4")}})
			if err != nil {
				t.Fatal(err)
			}
			return wf
		}
		loose := mustEnqueue(t, q, lite.NewJob{Kind: "convert"})
		a := batch(4)
		mustEnqueue(t, q, lite.NewJob{Kind: "convert"})
		b := batch(2)
		mustDone(t, q, leaseID(t, q, loose), "")
		mustDie(t, q, a.IDs[0])
		list := func(f lite.ListFilter) []int64 {
			jobs, err := q.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			ids := []int64{}
			for _, j := range jobs {
				ids = append(ids, j.ID)
			}
			return ids
		}

		t.Run("a batch lists its own jobs alone", func(t *testing.T) {
			is := is.New(t)
			is.Equal(list(lite.ListFilter{Batch: a.Batch}), a.IDs)
			newest := slices.Clone(b.IDs)
			slices.Reverse(newest)
			is.Equal(list(lite.ListFilter{Batch: b.Batch, Newest: true}), newest)
			is.Equal(list(lite.ListFilter{Batch: 999}), []int64{})
		})

		t.Run("by state, and paged either way", func(t *testing.T) {
			is := is.New(t)
			is.Equal(list(lite.ListFilter{Batch: a.Batch, State: lite.StateDead}), a.IDs[:1])
			is.Equal(list(lite.ListFilter{Batch: a.Batch, State: lite.StateAvailable, Limit: 2}), a.IDs[1:3])
			is.Equal(list(lite.ListFilter{Batch: a.Batch, AfterID: a.IDs[2]}), a.IDs[3:])
			is.Equal(list(lite.ListFilter{Batch: a.Batch, Newest: true, BeforeID: a.IDs[2], Limit: 1}), a.IDs[1:2])
			is.Equal(list(lite.ListFilter{Batch: a.Batch, State: lite.StateRunning}), []int64{})
		})

		t.Run("a negative batch is refused", func(t *testing.T) {
			_, err := q.List(ctx, lite.ListFilter{Batch: -1})
			is.New(t).True(err != nil)
		})

		t.Run("a batch names its callback", func(t *testing.T) {
			is := is.New(t)
			got, err := q.GetBatch(ctx, a.Batch)
			is.NoErr(err)
			is.Equal(got.Callback, &lite.Callback{Queue: lite.DefaultQueue, Kind: "report", Payload: []byte("q4"), MaxAttempts: lite.DefaultMaxAttempts})
			text, err := json.Marshal(got)
			is.NoErr(err)
			var out struct{ Callback map[string]any }
			is.NoErr(json.Unmarshal(text, &out))
			is.Equal(out.Callback, map[string]any{"queue": "default", "kind": "report", "payload": "q4", "max_attempts": float64(lite.DefaultMaxAttempts)})
		})
	})
}
