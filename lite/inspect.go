package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

var getSQL = stmt{
	sqlite:   `select ` + jobColumns + ` from lite_jobs where id = ?`,
	postgres: `select ` + jobColumns + ` from lite_jobs where id = $1`,
}

// Get reads one job. An unknown id gives ErrNotFound.
func (q *Queue) Get(ctx context.Context, id int64) (*Job, error) {
	j, err := scanJob(q.r.QueryRowContext(ctx, q.sql(getSQL), id))
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, classify(err))
	}
	if j.Steps, err = q.Steps(ctx, id); err != nil {
		return nil, fmt.Errorf("get job %d: %w", id, err)
	}
	return j, nil
}

// ListFilter picks jobs for List. Empty fields match everything.
type ListFilter struct {
	State State
	Queue string
	Kind  string
	// UniqueKey finds the jobs enqueued with this key.
	UniqueKey string
	// Tags finds the jobs that carry every one of these tags.
	Tags []string
	// Batch finds the jobs of this batch (see Workflow.Batch): a page
	// of them reads the batch's own index, however many jobs the file
	// holds.
	Batch int64
	// AfterID pages in id order: pass the last id of the previous page.
	AfterID int64
	// Newest lists the newest jobs first, as a dashboard shows them;
	// BeforeID pages it: pass the last id of the previous page.
	Newest   bool
	BeforeID int64
	// Limit caps the page. Default 100.
	Limit int
	// Parked finds the available jobs parked for this reason (ParkedSleep,
	// ParkedSignal) whose time is to come: sleeping, or awaiting a signal.
	// One whose sleep or timeout has passed is ready, not parked.
	Parked string
	// OmitBodies leaves every job's Payload, Result and Log empty, for a
	// listing that shows neither: a page of large jobs then costs their
	// other fields alone in memory. Get reads one job whole.
	OmitBodies bool
}

// listSQL reads a page of jobs. Its state, queue, kind, unique key and
// tags (a JSON array, every one of which a job must carry) and parked
// marker are filters that an empty parameter turns off, and it pages by id, up
// from ?4 or, newest first, down from ?4: a range of ids either way, which
// SQLite seeks to rather than walks to.
//
// Running jobs are few, and SQLite's planner, which has no statistics,
// would walk every row by id to find a page of them (230 ms on a file of
// a million finished jobs): that list walks their partial index and
// sorts what it finds (under a millisecond). Available jobs are many and
// the newest, so newest first finds them at once by id. A batch's jobs
// (?9) are read from the batch's index, in id order within it, so that a
// page of a batch costs the same on a file of a million other jobs.
func listSQL(newest bool, by listIndex) stmt {
	order, pgOrder := "id > ?4 order by id", "id > $4 order by id"
	if newest {
		order, pgOrder = "id < ?4 order by id desc", "id < $4 order by id desc"
	}
	from, state, pgState := "lite_jobs", "(?1 = '' or state = ?1)", "($1 = '' or state = $1)"
	parked := 9 // the parameter of ListFilter.Parked, after the batch's if any
	switch by {
	case listRunning:
		from, state = "lite_jobs indexed by lite_jobs_running", "?1 = 'running' and state = 'running'"
	case listBatch:
		from, state, pgState = "lite_jobs indexed by lite_jobs_batch", "batch_id = ?9 and "+state, "batch_id = $9 and "+pgState
		parked = 10
	}
	// A parked job whose time has come is ready, as parkedCounts has it:
	// its marker stays until a worker takes it. now is the parameter
	// after Parked's.
	p, now := strconv.Itoa(parked), strconv.Itoa(parked+1)
	state += " and (?" + p + " = '' or (state = 'available' and parked = ?" + p + " and run_at > ?" + now + "))"
	pgState += " and ($" + p + " = '' or (state = 'available' and parked = $" + p + " and run_at > $" + now + "))"
	return stmt{
		sqlite: `select ` + listColumns.sqlite + ` from ` + from + `
where ` + state + ` and (?2 = '' or queue = ?2) and (?3 = '' or kind = ?3)
  and (?6 = '' or unique_key = ?6)
  and (?8 = '[]' or not exists (select 1 from json_each(?8) as want
    where want.value not in (select value from json_each(lite_jobs.tags))))
  and ` + order + ` limit ?5`,
		postgres: `select ` + listColumns.postgres + ` from lite_jobs
where ` + pgState + ` and ($2 = '' or queue = $2) and ($3 = '' or kind = $3)
  and ($6 = '' or unique_key = $6) and ($8 = '[]' or tags @> $8::text::jsonb)
  and ` + pgOrder + ` limit $5`,
	}
}

// listIndex is the index a page of jobs walks: the table's ids, the
// running jobs' partial index, or a batch's.
type listIndex int

const (
	listByID listIndex = iota
	listRunning
	listBatch
)

// listColumns are jobColumns with payload, result and log left empty when
// the seventh parameter (OmitBodies) is true.
var listColumns = stmt{
	sqlite: strings.NewReplacer("payload,", "case when ?7 then x'' else payload end,",
		"result,", "case when ?7 then null else result end,",
		"log_tail", "case when ?7 then null else log_tail end").Replace(jobColumns),
	postgres: strings.NewReplacer("payload,", "case when $7 then ''::bytea else payload end,",
		"result,", "case when $7 then null else result end,",
		"log_tail", "case when $7 then null else log_tail end").Replace(jobColumns),
}

// listSQLs holds listSQL's texts by [newest][listIndex], each prepared once.
var listSQLs = [2][3]stmt{
	{listSQL(false, listByID), listSQL(false, listRunning), listSQL(false, listBatch)},
	{listSQL(true, listByID), listSQL(true, listRunning), listSQL(true, listBatch)},
}

// List returns a page of the jobs matching f, in id order or, with
// f.Newest, newest first.
func (q *Queue) List(ctx context.Context, f ListFilter) ([]*Job, error) {
	if f.State != "" && !f.State.valid() {
		return nil, fmt.Errorf("list: unknown state %q", f.State)
	}
	switch {
	case f.Limit < 0:
		return nil, fmt.Errorf("list: negative limit %d", f.Limit)
	case f.Limit == 0:
		f.Limit = 100
	}
	from := f.AfterID
	switch {
	case f.Newest && f.AfterID != 0:
		return nil, errors.New("list: AfterID pages in id order; newest first pages with BeforeID")
	case !f.Newest && f.BeforeID != 0:
		return nil, errors.New("list: BeforeID pages newest first; set Newest")
	case f.BeforeID < 0:
		return nil, fmt.Errorf("list: negative BeforeID %d", f.BeforeID)
	case f.Batch < 0:
		return nil, fmt.Errorf("list: negative Batch %d", f.Batch)
	case f.Newest && f.BeforeID == 0:
		from = math.MaxInt64
	case f.Newest:
		from = f.BeforeID
	}
	tags, err := encodeTags(f.Tags)
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	by, args := listByID, []any{string(f.State), f.Queue, f.Kind, from, f.Limit, f.UniqueKey, f.OmitBodies, tags}
	switch {
	case f.Batch != 0: // a batch is the narrower index, whatever the state
		by, args = listBatch, append(args, f.Batch)
	case f.State == StateRunning:
		by = listRunning
	}
	args = append(args, f.Parked, q.nowMillis())
	rows, err := q.r.QueryContext(ctx, q.sql(listSQLs[b2i(f.Newest)][by]), args...)
	if err != nil {
		return nil, fmt.Errorf("list: %w", classify(err))
	}
	defer rows.Close()
	var jobs []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list: %w", classify(err))
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list: %w", classify(err))
	}
	return jobs, nil
}

// QueueStats counts one queue's jobs by state. Its JSON form is the one
// `lite stats --json` prints (see MarshalJSON).
type QueueStats struct {
	Queue string
	// Counts has an entry for each state the queue has jobs in; a state
	// with none reads as zero.
	Counts map[State]int64
	// OldestReady is how long the oldest available job whose run_at has
	// come has been waiting; zero when none waits.
	OldestReady time.Duration
	// Sleeping and Awaiting count the available jobs parked by Sleep and
	// by AwaitSignal (see docs/durable.md): they hold no slot and are
	// counted in Counts[StateAvailable] too.
	Sleeping, Awaiting int64
	// Paused says that no job of the queue starts until it is resumed
	// (see Queue.Pause).
	Paused bool
	// Limits are the queue's limits across processes (see
	// Queue.SetLimits); zero fields are no limit.
	Limits Limits
	// LimitsOwner is who set Limits: "" by hand, or the Owner of the
	// Declaration that declared them.
	LimitsOwner string
}

var statsSQL = stmt{
	sqlite: `select queue, state, count(*),
    min(case when state = 'available' and run_at <= ?1 then run_at end)
from lite_jobs group by queue, state
union all ` + parkedCounts("?1") + `
order by 1`,
	postgres: `select queue, state, count(*),
    min(case when state = 'available' and run_at <= $1 then run_at end)
from lite_jobs group by queue, state
union all ` + parkedCounts("$1") + `
order by 1`,
}

// parkedCounts counts each queue's parked jobs by why they wait, as rows
// of a pseudo-state "parked:" + the reason, from the index
// lite_jobs_parked alone: those whose time is to come, now being the
// parameter (a job whose sleep or timeout has passed is ready, though
// its marker stays until a worker takes it). It is a branch of the
// statement that counts the states, so that both counts are of one
// snapshot: read apart, a job that parked in between was counted running
// and parked at once.
func parkedCounts(now string) string {
	return `select queue, 'parked:' || parked, count(*), null from lite_jobs
where parked is not null and state = 'available' and run_at > ` + now + ` group by queue, parked`
}

// Stats counts jobs per queue and state, in queue order, with each
// queue's pause and limits. A queue with settings but no jobs is listed
// too, with no counts.
func (q *Queue) Stats(ctx context.Context) ([]QueueStats, error) {
	stats, err := q.jobStats(ctx)
	if err != nil {
		return nil, err
	}
	stats, err = q.withFlows(ctx, stats)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return stats, nil
}

// withFlows sets each queue's pause and limits in stats, and adds a row
// for each queue that has settings but no row, keeping queue order.
func (q *Queue) withFlows(ctx context.Context, stats []QueueStats) ([]QueueStats, error) {
	flows, err := q.queueFlows(ctx)
	if err != nil {
		return nil, err
	}
	for i := range stats {
		if f, ok := flows[stats[i].Queue]; ok {
			stats[i].Paused, stats[i].Limits, stats[i].LimitsOwner = f.paused, f.limits, f.limitsOwner
			delete(flows, stats[i].Queue)
		}
	}
	for queue, f := range flows {
		stats = append(stats, QueueStats{Queue: queue, Counts: map[State]int64{}, Paused: f.paused, Limits: f.limits, LimitsOwner: f.limitsOwner})
	}
	// Both lists are in queue order, and so is a bytewise sort: the text
	// order of both engines (PostgreSQL's queue column collates "C").
	slices.SortFunc(stats, func(a, b QueueStats) int { return strings.Compare(a.Queue, b.Queue) })
	return stats, nil
}

// jobStats counts jobs per queue and state, in queue order.
func (q *Queue) jobStats(ctx context.Context) ([]QueueStats, error) {
	out, err := q.queueCounts(ctx, statsSQL)
	if err != nil {
		return nil, fmt.Errorf("stats: %w", err)
	}
	return out, nil
}

// queueCounts runs a statement that counts jobs per queue and state, in
// queue order, with the oldest ready job's run_at per queue, and gathers
// its rows into one QueueStats per queue.
func (q *Queue) queueCounts(ctx context.Context, s stmt) ([]QueueStats, error) {
	now := q.nowMillis()
	rows, err := q.r.QueryContext(ctx, q.sql(s), now)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []QueueStats
	for rows.Next() {
		var (
			queue  string
			state  State
			n      int64
			oldest sql.NullInt64
		)
		if err := rows.Scan(&queue, &state, &n, &oldest); err != nil {
			return nil, classify(err)
		}
		if len(out) == 0 || out[len(out)-1].Queue != queue {
			out = append(out, QueueStats{Queue: queue, Counts: map[State]int64{}})
		}
		s := &out[len(out)-1]
		switch state {
		case "parked:" + ParkedSleep:
			s.Sleeping = n
		case "parked:" + ParkedSignal:
			s.Awaiting = n
		default:
			s.Counts[state] = n
		}
		if oldest.Valid {
			s.OldestReady = time.Duration(now-oldest.Int64) * time.Millisecond
		}
	}
	if err := rows.Err(); err != nil {
		return nil, classify(err)
	}
	return out, nil
}

var unfinishedSQL = stmt{
	sqlite: `select count(*) from lite_jobs
where state in ('available', 'running') and (?1 is null or queue in (select value from json_each(?1)))`,
	postgres: `select count(*) from lite_jobs
where state in ('available', 'running') and ($1::jsonb is null or queue in (select jsonb_array_elements_text($1::jsonb)))`,
}

// Unfinished counts the available and running jobs in the queues (every
// queue when empty).
func (q *Queue) Unfinished(ctx context.Context, queues []string) (int64, error) {
	var n int64
	err := q.r.QueryRowContext(ctx, q.sql(unfinishedSQL), nullList(queues)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count unfinished: %w", classify(err))
	}
	return n, nil
}
