package lite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// DependencyPolicy says what a job does when a job it waits for ends dead
// or cancelled.
type DependencyPolicy string

// The policies. The zero value is DependencyCancel.
const (
	// DependencyCancel cancels the job, and in turn the jobs that wait for
	// it and cancel too.
	DependencyCancel DependencyPolicy = "cancel"
	// DependencyRun counts the ended dependency as finished: the job runs
	// once every dependency has ended, however.
	DependencyRun DependencyPolicy = "run"
	// DependencyBlock leaves the job blocked, as `lite show` then says,
	// until the dependency is retried and done, or the job cancelled.
	DependencyBlock DependencyPolicy = "block"
)

// Callback is a job to enqueue when another ends: a job's, enqueued in the
// transaction that ends it, or a batch's, in the transaction of its last
// job's end. Its Meta carries what ended: "lite.job" and "lite.state" for
// a job's; "lite.batch", "lite.done", "lite.dead" and "lite.cancelled"
// (counts) for a batch's.
type Callback struct {
	// Queue defaults to the queue of the job it follows (a batch's, of its
	// first job).
	Queue string
	// Kind defaults to DefaultKind.
	Kind    string
	Payload []byte
	// MaxAttempts defaults to DefaultMaxAttempts.
	MaxAttempts int
}

// encode is the callback as the callback columns hold it: JSON [queue,
// kind, payload in hex, max attempts].
func (c Callback) encode(q *Queue, queue string) (string, error) {
	j, err := q.validate(NewJob{Queue: orEmpty(c.Queue, queue), Kind: c.Kind, Payload: c.Payload, MaxAttempts: c.MaxAttempts})
	if err != nil {
		return "", fmt.Errorf("callback: %w", err)
	}
	text, err := json.Marshal([]any{j.queue, j.kind, hex.EncodeToString(j.payload), j.maxAttempts})
	return string(text), err
}

// decodeCallback reads a callback column as encode writes it.
func decodeCallback(text string) (*Callback, error) {
	var c Callback
	var payload string
	if err := json.Unmarshal([]byte(text), &[]any{&c.Queue, &c.Kind, &payload, &c.MaxAttempts}); err != nil {
		return nil, fmt.Errorf("callback: %w", err)
	}
	var err error
	if c.Payload, err = hex.DecodeString(payload); err != nil {
		return nil, fmt.Errorf("callback payload: %w", err)
	}
	return &c, nil
}

// errBlockedKey refuses a unique key on a job that waits for others: a
// blocked job does not hold its key, and another job holding it when
// this one became available would fail the ack that unblocks it.
var errBlockedKey = errors.New("a job that waits for others cannot have a unique key")

// errWorkflowHold refuses UniqueFor, UniqueUntil and Debounce in a
// workflow: a step folded into a job enqueued before would tie the
// workflow's graph and batch to a job that is not the workflow's.
var errWorkflowHold = errors.New("a workflow's step cannot have UniqueFor, UniqueUntil or Debounce")

// follows is what a job has of composite work: the jobs it waits for,
// its policy, its callback, its batch.
type follows struct {
	dependsOn []int64
	policy    DependencyPolicy
	callback  sql.NullString
	batch     sql.NullInt64
}

func (f follows) any() bool {
	return len(f.dependsOn) > 0 || f.callback.Valid || f.batch.Valid
}

func (q *Queue) validateFollows(j NewJob, queue string) (follows, error) {
	f := follows{policy: j.OnDependencyFailure}
	switch f.policy {
	case "":
		f.policy = DependencyCancel
	case DependencyCancel, DependencyRun, DependencyBlock:
	default:
		return f, fmt.Errorf("dependency policy %q is not cancel, run or block", j.OnDependencyFailure)
	}
	if len(j.DependsOn) > 0 && j.UniqueKey != "" {
		return f, errBlockedKey
	}
	for _, id := range j.DependsOn {
		if !slices.Contains(f.dependsOn, id) {
			f.dependsOn = append(f.dependsOn, id)
		}
	}
	if j.Callback != nil {
		text, err := j.Callback.encode(q, queue)
		if err != nil {
			return f, err
		}
		f.callback = sql.NullString{String: text, Valid: true}
	}
	return f, nil
}

// lockDepsSQL marks each job waited for as having dependents, so that its
// end runs the trigger that counts it, and reads its state. On a server
// the update locks each row until the enqueue commits: an end of one of
// them then waits for the edge to exist and counts it, or has committed
// before and is read here. They are locked in id order, so that two
// enqueues never wait on each other.
var lockDepsSQL = stmt{
	sqlite: `update lite_jobs set has_dependents = 1 where id in (select value from json_each(?))
returning id, state`,
	postgres: `update lite_jobs set has_dependents = true where id in (select id from lite_jobs
    where id in (select jsonb_array_elements_text($1::jsonb)::bigint) order by id for update)
returning id, state`,
}

var insertDepsSQL = stmt{
	sqlite: `insert into lite_deps (depends_on, job_id, resolved)
select value ->> 0, ?2, value ->> 1 from json_each(?1)`,
	postgres: `insert into lite_deps (depends_on, job_id, resolved)
select (e ->> 0)::bigint, $2, (e ->> 1)::bigint from jsonb_array_elements($1::jsonb) as e`,
}

var setFollowsSQL = stmt{
	sqlite: `update lite_jobs set state = case when ?1 > 0 then 'blocked' else state end,
    deps_pending = ?1, on_dep_failure = ?2, callback = ?3, batch_id = ?4
where id = ?5`,
	postgres: `update lite_jobs set state = case when $1 > 0 then 'blocked' else state end,
    deps_pending = $1, on_dep_failure = $2, callback = $3::text::jsonb, batch_id = $4
where id = $5`,
}

// follow stores what job id, just inserted on c inside a transaction,
// waits for and calls back: blocked while a job it waits for is not done.
func (q *Queue) follow(ctx context.Context, c conn, id int64, f follows) error {
	pending, err := q.storeEdges(ctx, c, id, f)
	if err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, q.sql(setFollowsSQL), pending, string(f.policy), f.callback, f.batch, id)
	return err
}

// storeEdges stores job id's edges and returns how many of them are pending.
func (q *Queue) storeEdges(ctx context.Context, c conn, id int64, f follows) (int, error) {
	if len(f.dependsOn) == 0 {
		return 0, nil
	}
	states, err := q.depStates(ctx, c, f.dependsOn)
	if err != nil {
		return 0, err
	}
	edges := make([][2]int64, 0, len(f.dependsOn))
	pending := 0
	for _, dep := range f.dependsOn {
		st, ok := states[dep]
		resolved := int64(1)
		switch {
		case !ok:
			return 0, fmt.Errorf("depends on job %d: %w", dep, ErrNotFound)
		case st == StateDone || (st.Finished() && f.policy == DependencyRun):
		case st.Finished() && f.policy == DependencyCancel:
			return 0, fmt.Errorf("depends on job %d, which is %s: %w", dep, st, ErrInvalidState)
		default:
			pending, resolved = pending+1, 0
		}
		edges = append(edges, [2]int64{dep, resolved})
	}
	text, err := json.Marshal(edges)
	if err != nil {
		return 0, err
	}
	if _, err := c.ExecContext(ctx, q.sql(insertDepsSQL), string(text), id); err != nil {
		return 0, fmt.Errorf("dependencies: %w", err)
	}
	return pending, nil
}

func (q *Queue) depStates(ctx context.Context, c conn, ids []int64) (map[int64]State, error) {
	text, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	rows, err := c.QueryContext(ctx, q.sql(lockDepsSQL), string(text))
	if err != nil {
		return nil, fmt.Errorf("dependencies: %w", err)
	}
	defer rows.Close()
	states := make(map[int64]State, len(ids))
	for rows.Next() {
		var id int64
		var st State
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		states[id] = st
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	if afterDepsLock != nil {
		afterDepsLock()
	}
	return states, nil
}

// afterDepsLock, when a test sets it, runs in an enqueue once it holds the
// rows of the jobs its new jobs wait for: a process frozen there.
var afterDepsLock func()

// Step is one job of a workflow: Name lets the steps after it wait for it
// (After) before it has an id. Job.DependsOn may name jobs already
// enqueued as well.
type Step struct {
	Name  string
	Job   NewJob
	After []string
}

// Workflow is what EnqueueWorkflow enqueues: steps that wait for each
// other, and, if Batch is set, a batch of them all whose end (every step
// finished, done, dead or cancelled) enqueues Batch once.
type Workflow struct {
	Steps []Step
	Batch *Callback
}

// Enqueued workflow: the steps' ids, in the order given, and the batch's
// id (0 without one).
type WorkflowIDs struct {
	IDs   []int64
	Batch int64
}

// errEmptyBatch refuses a batch of no jobs: no job of it would ever end,
// so it would never call back.
var errEmptyBatch = errors.New("enqueue workflow: a batch needs at least one step; with none it would never call back")

// ErrCycle means a workflow's steps wait for each other in a circle.
var ErrCycle = errors.New("dependency cycle")

// EnqueueWorkflow adds every step in one transaction, all or none, each
// blocked until the jobs it waits for are done. A name used twice or
// unknown, a cycle, a job id that does not exist, and a unique key held
// by an unfinished job are refused, with nothing stored. The steps' jobs
// go through the queue's EnqueueMiddleware, as one batch.
func (q *Queue) EnqueueWorkflow(ctx context.Context, wf Workflow) (WorkflowIDs, error) {
	out, err := q.enqueueWorkflow(ctx, wf, func(ctx context.Context, insert func(c conn) error) error {
		return q.withTx(ctx, func(tx txConn) error { return insert(tx) })
	})
	if err != nil {
		return out, err
	}
	q.notify()
	return out, q.afterWrite(ctx, "enqueue workflow")
}

// EnqueueWorkflowTx adds every step inside the caller's transaction on
// the same database, as EnqueueWorkflow does in its own: the steps exist
// if and only if the transaction commits, and what EnqueueWorkflow
// refuses is refused here too. On an error none of the workflow is left
// in the transaction (it runs in a savepoint, as EnqueueBatchTx's jobs
// do), and the caller's own writes before the call stay.
func (q *Queue) EnqueueWorkflowTx(ctx context.Context, tx *sql.Tx, wf Workflow) (WorkflowIDs, error) {
	// No wake-up: see EnqueueTx.
	return q.enqueueWorkflow(ctx, wf, func(ctx context.Context, insert func(c conn) error) error {
		return inSavepoint(ctx, tx, func() error { return insert(tx) })
	})
}

// enqueueWorkflow hands wf's jobs to the enqueue middleware, then checks
// wf with the jobs the middleware passed on and inserts it with inTx,
// which runs insert inside a transaction.
func (q *Queue) enqueueWorkflow(ctx context.Context, wf Workflow, inTx func(ctx context.Context, insert func(c conn) error) error) (WorkflowIDs, error) {
	jobs := make([]NewJob, len(wf.Steps))
	for i, s := range wf.Steps {
		jobs[i] = s.Job
	}
	var out WorkflowIDs
	_, err := q.intercepted(ctx, jobs, func(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
		wf.Steps = slices.Clone(wf.Steps)
		for i := range jobs {
			wf.Steps[i].Job = jobs[i]
		}
		p, err := q.planWorkflow(wf)
		if err != nil {
			return nil, err
		}
		err = inTx(ctx, func(c conn) (err error) {
			out, err = p.insert(ctx, q, c)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("enqueue workflow: %w", classify(err))
		}
		got := make([]Enqueued, len(out.IDs))
		for i, id := range out.IDs {
			got[i].ID = id
		}
		return got, nil
	})
	if err != nil {
		return WorkflowIDs{}, err
	}
	return out, nil
}

// workflowPlan is a workflow checked and ready to insert: its steps in an
// order where each comes after those it waits for, each step's row, and
// its batch's callback.
type workflowPlan struct {
	wf    Workflow
	order []int
	rows  []jobRow
	batch sql.NullString
}

// planWorkflow checks wf before any of it is written, so that bad input
// never starts a transaction.
func (q *Queue) planWorkflow(wf Workflow) (workflowPlan, error) {
	p := workflowPlan{wf: wf, rows: make([]jobRow, len(wf.Steps))}
	var err error
	if p.order, err = workflowOrder(wf.Steps); err != nil {
		return p, fmt.Errorf("enqueue workflow: %w", err)
	}
	for i, s := range wf.Steps {
		p.rows[i], err = q.validate(s.Job)
		switch {
		case err != nil:
		case len(s.After) > 0 && s.Job.UniqueKey != "":
			err = errBlockedKey
		case s.Job.UniqueFor > 0 || s.Job.UniqueUntil != "" || p.rows[i].unique.debounce:
			err = errWorkflowHold
		}
		if err != nil {
			return p, fmt.Errorf("enqueue workflow: step %q: %w", s.Name, err)
		}
	}
	if wf.Batch != nil {
		if len(p.rows) == 0 {
			return p, errEmptyBatch
		}
		text, err := wf.Batch.encode(q, p.rows[0].queue)
		if err != nil {
			return p, fmt.Errorf("enqueue workflow: batch %w", err)
		}
		p.batch = sql.NullString{String: text, Valid: true}
	}
	return p, nil
}

// insert writes the planned workflow on c, inside a transaction, and
// returns its ids.
func (p workflowPlan) insert(ctx context.Context, q *Queue, c conn) (WorkflowIDs, error) {
	out := WorkflowIDs{IDs: make([]int64, len(p.rows))}
	if p.batch.Valid {
		if err := c.QueryRowContext(ctx, q.sql(insertBatchSQL), len(p.rows), p.batch, q.nowMillis()).Scan(&out.Batch); err != nil {
			return out, fmt.Errorf("batch: %w", err)
		}
	}
	names := map[string]int64{}
	for _, i := range p.order {
		step := p.wf.Steps[i]
		id, err := q.insertStep(ctx, c, step, p.rows[i], names, out.Batch)
		if err != nil {
			return out, fmt.Errorf("step %q: %w", step.Name, err)
		}
		out.IDs[i] = id
		if step.Name != "" {
			names[step.Name] = id
		}
	}
	return out, nil
}

var insertBatchSQL = stmt{
	sqlite:   `insert into lite_batches (total, callback, created_at) values (?, ?, ?) returning id`,
	postgres: `insert into lite_batches (total, callback, created_at) values ($1, $2::text::jsonb, $3) returning id`,
}

func (q *Queue) insertStep(ctx context.Context, c conn, s Step, r jobRow, names map[string]int64, batch int64) (int64, error) {
	f := r.follows
	for _, name := range s.After { // a name given twice is one dependency
		if id := names[name]; !slices.Contains(f.dependsOn, id) {
			f.dependsOn = append(f.dependsOn, id)
		}
	}
	f.batch = sql.NullInt64{Int64: batch, Valid: batch != 0}
	out, err := q.insert(ctx, c, r)
	if err != nil || !f.any() {
		return out.ID, err
	}
	return out.ID, q.follow(ctx, c, out.ID, f)
}

// workflowOrder returns the steps' indexes in an order where each comes
// after every step it waits for, or an error naming a name that is used
// twice or unknown, or a step in a cycle.
func workflowOrder(steps []Step) ([]int, error) {
	index := map[string]int{}
	for i, s := range steps {
		if s.Name == "" {
			continue
		}
		if _, dup := index[s.Name]; dup {
			return nil, fmt.Errorf("step name %q used twice", s.Name)
		}
		index[s.Name] = i
	}
	const (
		unseen = iota
		visiting
		placed
	)
	mark := make([]int, len(steps))
	order := make([]int, 0, len(steps))
	var visit func(i int) error
	visit = func(i int) error {
		switch mark[i] {
		case placed:
			return nil
		case visiting:
			return fmt.Errorf("step %q waits for itself, through the steps it waits for: %w", steps[i].Name, ErrCycle)
		}
		mark[i] = visiting
		for _, name := range steps[i].After {
			j, ok := index[name]
			if !ok {
				return fmt.Errorf("step %q waits for %q, which no step is named", steps[i].Name, name)
			}
			if err := visit(j); err != nil {
				return err
			}
		}
		mark[i] = placed
		order = append(order, i)
		return nil
	}
	for i := range steps {
		if err := visit(i); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// Dependency is a job that another waits for, or that waits for it.
type Dependency struct {
	ID     int64
	Kind   string
	State  State
	Result []byte
}

var dependenciesSQL = stmt{
	sqlite: `select j.id, j.kind, j.state, j.result from lite_deps d join lite_jobs j on j.id = d.depends_on
where d.job_id = ? order by j.id`,
	postgres: `select j.id, j.kind, j.state, j.result from lite_deps d join lite_jobs j on j.id = d.depends_on
where d.job_id = $1 order by j.id`,
}

var dependentsSQL = stmt{
	sqlite: `select j.id, j.kind, j.state, j.result from lite_deps d join lite_jobs j on j.id = d.job_id
where d.depends_on = ? order by j.id`,
	postgres: `select j.id, j.kind, j.state, j.result from lite_deps d join lite_jobs j on j.id = d.job_id
where d.depends_on = $1 order by j.id`,
}

// Dependencies lists the jobs job id waits for, with their states and
// results: a handler reads what the jobs before it returned. A job purged
// by retention is no longer listed.
func (q *Queue) Dependencies(ctx context.Context, id int64) ([]Dependency, error) {
	deps, err := q.related(ctx, q.sql(dependenciesSQL), id)
	if err != nil {
		return nil, fmt.Errorf("dependencies of job %d: %w", id, err)
	}
	return deps, nil
}

// Dependents lists the jobs that wait for job id.
func (q *Queue) Dependents(ctx context.Context, id int64) ([]Dependency, error) {
	deps, err := q.related(ctx, q.sql(dependentsSQL), id)
	if err != nil {
		return nil, fmt.Errorf("dependents of job %d: %w", id, err)
	}
	return deps, nil
}

func (q *Queue) related(ctx context.Context, query string, id int64) ([]Dependency, error) {
	rows, err := q.r.QueryContext(ctx, query, id)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var deps []Dependency
	for rows.Next() {
		var d Dependency
		if err := rows.Scan(&d.ID, &d.Kind, &d.State, &d.Result); err != nil {
			return nil, err
		}
		deps = append(deps, d)
	}
	return deps, classify(rows.Err())
}

// Batch is a batch's progress.
type Batch struct {
	ID                           int64
	Total, Done, Dead, Cancelled int
	CreatedAt                    time.Time
	// FinishedAt is when its last job ended and its callback was
	// enqueued; zero while jobs are pending.
	FinishedAt time.Time
	// Callback is the job its end enqueues, with its defaults filled in.
	Callback *Callback
}

// Pending is how many of the batch's jobs have not ended.
func (b Batch) Pending() int { return b.Total - b.Done - b.Dead - b.Cancelled }

var batchSQL = stmt{
	sqlite:   `select id, total, done, dead, cancelled, created_at, finished_at, callback from lite_batches where id = ?`,
	postgres: `select id, total, done, dead, cancelled, created_at, finished_at, callback::text from lite_batches where id = $1`,
}

// GetBatch reads a batch's progress. An unknown id gives ErrNotFound.
func (q *Queue) GetBatch(ctx context.Context, id int64) (Batch, error) {
	var b Batch
	var created int64
	var finished sql.NullInt64
	var callback sql.NullString
	err := q.r.QueryRowContext(ctx, q.sql(batchSQL), id).
		Scan(&b.ID, &b.Total, &b.Done, &b.Dead, &b.Cancelled, &created, &finished, &callback)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err == nil && callback.Valid {
		b.Callback, err = decodeCallback(callback.String)
	}
	if err != nil {
		return Batch{}, fmt.Errorf("get batch %d: %w", id, classify(err))
	}
	b.CreatedAt = fromMillis(created)
	if finished.Valid {
		b.FinishedAt = fromMillis(finished.Int64)
	}
	return b, nil
}

// Links is what a job has of composite work: the jobs it waits for and
// the jobs that wait for it, each with its state, how many of the first
// are not yet done, its policy, and its batch (0: none).
type Links struct {
	WaitsFor, WaitedBy []Dependency
	Pending            int
	Policy             DependencyPolicy
	Batch              int64
}

var linksSQL = stmt{
	sqlite:   `select deps_pending, on_dep_failure, coalesce(batch_id, 0) from lite_jobs where id = ?`,
	postgres: `select deps_pending, on_dep_failure, coalesce(batch_id, 0) from lite_jobs where id = $1`,
}

// Links reads job id's links. An unknown id gives ErrNotFound.
func (q *Queue) Links(ctx context.Context, id int64) (Links, error) {
	var l Links
	err := q.r.QueryRowContext(ctx, q.sql(linksSQL), id).Scan(&l.Pending, &l.Policy, &l.Batch)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return Links{}, fmt.Errorf("links of job %d: %w", id, classify(err))
	}
	if l.WaitsFor, err = q.Dependencies(ctx, id); err != nil {
		return Links{}, err
	}
	if l.WaitedBy, err = q.Dependents(ctx, id); err != nil {
		return Links{}, err
	}
	return l, nil
}

// MarshalJSON writes the batch as `lite batch --json` prints it:
// {"id": 1, "total": 3, "done": 2, "dead": 1, "cancelled": 0,
// "pending": 0, "created_at": "…Z", "finished_at": "…Z", "callback":
// {"queue": "default", "kind": "report", "payload": "…",
// "max_attempts": 25}}, finished_at left out while jobs are pending,
// and the callback's payload in payload_base64 when it is not UTF-8, as
// a job's is.
func (b Batch) MarshalJSON() ([]byte, error) {
	type callbackJSON struct {
		Queue         string  `json:"queue"`
		Kind          string  `json:"kind"`
		Payload       *string `json:"payload,omitempty"`
		PayloadBase64 []byte  `json:"payload_base64,omitempty"`
		MaxAttempts   int     `json:"max_attempts"`
	}
	var cb *callbackJSON
	if c := b.Callback; c != nil {
		cb = &callbackJSON{Queue: c.Queue, Kind: c.Kind, MaxAttempts: c.MaxAttempts}
		cb.Payload, cb.PayloadBase64 = textOrBase64(c.Payload)
	}
	return json.Marshal(struct {
		ID         int64         `json:"id"`
		Total      int           `json:"total"`
		Done       int           `json:"done"`
		Dead       int           `json:"dead"`
		Cancelled  int           `json:"cancelled"`
		Pending    int           `json:"pending"`
		CreatedAt  time.Time     `json:"created_at"`
		FinishedAt time.Time     `json:"finished_at,omitzero"`
		Callback   *callbackJSON `json:"callback,omitempty"`
	}{b.ID, b.Total, b.Done, b.Dead, b.Cancelled, b.Pending(), b.CreatedAt.UTC(), b.FinishedAt.UTC(), cb})
}

// linkJSON is a Dependency in Links' JSON form: its result is the job's
// own to read.
type linkJSON struct {
	ID    int64  `json:"id"`
	Kind  string `json:"kind"`
	State State  `json:"state"`
}

// MarshalJSON writes the links as the JSON API serves them:
// {"waits_for": [{"id": 7, "kind": "fetch", "state": "done"}],
// "waited_by": [], "pending": 0, "policy": "cancel", "batch": 3}, batch
// left out without one.
func (l Links) MarshalJSON() ([]byte, error) {
	list := func(deps []Dependency) []linkJSON {
		out := make([]linkJSON, len(deps))
		for i, d := range deps {
			out[i] = linkJSON{d.ID, d.Kind, d.State}
		}
		return out
	}
	return json.Marshal(struct {
		WaitsFor []linkJSON       `json:"waits_for"`
		WaitedBy []linkJSON       `json:"waited_by"`
		Pending  int              `json:"pending"`
		Policy   DependencyPolicy `json:"policy"`
		Batch    int64            `json:"batch,omitempty"`
	}{list(l.WaitsFor), list(l.WaitedBy), l.Pending, l.Policy, l.Batch})
}
