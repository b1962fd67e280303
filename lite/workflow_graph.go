package lite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
)

// DefaultGraphLimit is how many jobs a Graph holds when its limit is 0.
const DefaultGraphLimit = 2000

// Graph is the jobs connected to one through dependencies: what it waits
// for and what waits for it, and in turn theirs, whichever way each
// edge points.
type Graph struct {
	// Jobs are in layers: each after every job of the graph it waits
	// for, and by id within a layer.
	Jobs []GraphJob
	// Truncated says that the graph has more jobs than its limit: those
	// with More have dependencies or dependents that are left out.
	Truncated bool
}

// GraphJob is one job of a Graph.
type GraphJob struct {
	ID    int64
	Queue string
	Kind  string
	State State
	// WaitsFor are the jobs of the graph this one waits for, by id.
	WaitsFor []int64
	// Layer is the length of the longest chain of jobs of the graph
	// below this one: 0 for one that waits for none of them.
	Layer int
	// More says that it waits for, or is waited for by, a job that the
	// limit left out of the graph.
	More bool
}

// graphSQL walks the dependencies both ways from job ?1, breadth first,
// to at most ?2 jobs (a union never visits a job twice), and reads for
// each its fields, what of the graph it waits for, and whether an edge
// leads out of it. Each step of the walk and each edge read is an index
// lookup: the walk costs what the graph holds, not what the file does.
// A job purged by retention leaves its edges behind: the walk crosses
// it, and its row has no fields. The unary + keeps SQLite from looking
// each of the graph's jobs up among a job's dependencies (a lookup per
// pair of jobs: seconds for a graph of 2,000) rather than reading the
// job's dependencies and checking each against the graph. PostgreSQL evaluates the walk only as
// far as the limit reads it; SQLite stops at the limit of its recursion.
var graphSQL = stmt{
	sqlite: `with recursive g(id) as (
    select ?1
    union
    select case when d.depends_on = g.id then d.job_id else d.depends_on end
    from g join lite_deps d on d.depends_on = g.id or d.job_id = g.id
    limit ?2)
select g.id, j.queue, j.kind, j.state,
    (select json_group_array(d.depends_on) from lite_deps d where d.job_id = g.id and +d.depends_on in (select id from g)),
    exists (select 1 from lite_deps d where d.job_id = g.id and d.depends_on not in (select id from g))
      or exists (select 1 from lite_deps d where d.depends_on = g.id and d.job_id not in (select id from g))
from g left join lite_jobs j on j.id = g.id
order by g.id`,
	postgres: `with recursive g(id) as (
    select $1::bigint
    union
    select n.id from g cross join lateral (
        select d.job_id as id from lite_deps d where d.depends_on = g.id
        union all
        select d.depends_on from lite_deps d where d.job_id = g.id) as n),
s as (select id from g limit $2)
select s.id, j.queue, j.kind, j.state,
    coalesce((select jsonb_agg(d.depends_on) from lite_deps d where d.job_id = s.id and d.depends_on in (select id from s)), '[]')::text,
    exists (select 1 from lite_deps d where d.job_id = s.id and d.depends_on not in (select id from s))
      or exists (select 1 from lite_deps d where d.depends_on = s.id and d.job_id not in (select id from s))
from s left join lite_jobs j on j.id = s.id
order by s.id`,
}

// Graph reads the graph of the jobs connected to job id through
// dependencies, nearest first up to limit jobs (0: DefaultGraphLimit).
// An unknown id gives ErrNotFound.
func (q *Queue) Graph(ctx context.Context, id int64, limit int) (Graph, error) {
	switch {
	case limit < 0:
		return Graph{}, fmt.Errorf("graph of job %d: negative limit %d", id, limit)
	case limit == 0:
		limit = DefaultGraphLimit
	}
	g, err := q.readGraph(ctx, id, limit)
	if err == nil && !slices.ContainsFunc(g.Jobs, func(j GraphJob) bool { return j.ID == id }) {
		err = ErrNotFound
	}
	if err != nil {
		return Graph{}, fmt.Errorf("graph of job %d: %w", id, err)
	}
	g.layer()
	return g, nil
}

// readGraph reads graphSQL's rows, in id order.
func (q *Queue) readGraph(ctx context.Context, id int64, limit int) (Graph, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(graphSQL), id, limit)
	if err != nil {
		return Graph{}, classify(err)
	}
	defer rows.Close()
	var g Graph
	for rows.Next() {
		var j GraphJob
		var queue, kind, state sql.NullString
		var waitsFor string
		if err := rows.Scan(&j.ID, &queue, &kind, &state, &waitsFor, &j.More); err != nil {
			return Graph{}, classify(err)
		}
		g.Truncated = g.Truncated || j.More
		if !state.Valid { // purged: the walk went through it, the graph shows it no more
			continue
		}
		j.Queue, j.Kind, j.State = queue.String, kind.String, State(state.String)
		if err := json.Unmarshal([]byte(waitsFor), &j.WaitsFor); err != nil {
			return Graph{}, fmt.Errorf("dependencies of job %d: %w", j.ID, err)
		}
		slices.Sort(j.WaitsFor)
		g.Jobs = append(g.Jobs, j)
	}
	return g, classify(rows.Err())
}

// layer sets each job's layer and sorts the jobs by layer, after
// dropping the edges to jobs that are no longer there (purged by
// retention). A job waits only for jobs enqueued before it, whose ids are
// smaller (a workflow inserts its steps in dependency order), so in id
// order, as the jobs come, every job's dependencies have their layers
// already.
func (g *Graph) layer() {
	at := make(map[int64]int, len(g.Jobs))
	for i, j := range g.Jobs {
		at[j.ID] = i
	}
	for i := range g.Jobs {
		j := &g.Jobs[i]
		j.WaitsFor = slices.DeleteFunc(j.WaitsFor, func(dep int64) bool {
			_, ok := at[dep]
			return !ok
		})
		for _, dep := range j.WaitsFor {
			j.Layer = max(j.Layer, g.Jobs[at[dep]].Layer+1)
		}
	}
	slices.SortStableFunc(g.Jobs, func(a, b GraphJob) int { return cmp.Compare(a.Layer, b.Layer) })
}

// MarshalJSON writes the graph as the JSON API serves it and `lite show
// --graph --json` prints it: {"jobs": [{"id": 7, "queue": "default",
// "kind": "fetch", "state": "done", "waits_for": [], "layer": 0,
// "more": false}, …], "truncated": false}.
func (g Graph) MarshalJSON() ([]byte, error) {
	type jobJSON struct {
		ID       int64   `json:"id"`
		Queue    string  `json:"queue"`
		Kind     string  `json:"kind"`
		State    State   `json:"state"`
		WaitsFor []int64 `json:"waits_for"`
		Layer    int     `json:"layer"`
		More     bool    `json:"more"`
	}
	jobs := make([]jobJSON, len(g.Jobs))
	for i, j := range g.Jobs {
		jobs[i] = jobJSON(j)
		if j.WaitsFor == nil {
			jobs[i].WaitsFor = []int64{}
		}
	}
	return json.Marshal(struct {
		Jobs      []jobJSON `json:"jobs"`
		Truncated bool      `json:"truncated"`
	}{jobs, g.Truncated})
}
