package lite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LeaseRequest says which jobs a worker wants.
type LeaseRequest struct {
	// Queues to lease from; empty means every queue.
	Queues []string
	// Kinds to lease; empty means every kind.
	Kinds []string
	// Max is how many jobs to lease at most in one statement. Default 1.
	Max int
	// LockedBy is written to the jobs' locked_by. Default Options.Identity.
	LockedBy string
	// StaleAfter is the owner's promise: how long its heartbeat may lapse
	// before any process may reclaim the jobs. It is stored with each
	// lease, so a reclaimer with other settings honours it. Default
	// DefaultStaleAfter.
	StaleAfter time.Duration

	// slots, when set, is Max as the lease's round finds it once its lock
	// is held: a worker's free slots, with those the round's acks freed.
	slots func() int
	// worker is the leasing Worker's row in lite_workers, written to the
	// jobs' worker_id: the row's renewals keep them alive (see
	// reclaimSQL). Empty for a lease without a Worker's row.
	worker string
}

// DefaultStaleAfter is a lease's StaleAfter when the request gives none:
// six of a worker's default heartbeats.
const DefaultStaleAfter = 30 * time.Second

// uuidV4SQL makes a random version 4 UUID per row from one randomblob,
// so that every job of one lease statement gets its own token: SQLite's
// twin of PostgreSQL's gen_random_uuid(). The
// subquery names the row's id so that SQLite runs it for each row.
const uuidV4SQL = `(select lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
        substr('89ab', 1 + (abs(random()) % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12))
    from (select hex(randomblob(16)) as h where lite_jobs.id is not null))`

// queueFilter picks how a lease names its queues. One queue is an
// equality, so the lease walks lite_jobs_available in lease order and
// stops after N rows; a list of queues needs a sort of their available
// jobs.
type queueFilter int

const (
	anyQueue queueFilter = iota
	oneQueue
	someQueues
)

func filterFor(queues []string) queueFilter {
	switch len(queues) {
	case 0:
		return anyQueue
	case 1:
		return oneQueue
	}
	return someQueues
}

// leaseSet makes a job running under a fresh lease: a new generation, a
// new token, an attempt counted, a parked marker cleared, the first
// lease's time kept. Its parameters are locked_by, leased_at (also its
// first heartbeat, and the now that lite_flow reads), worker_id (the
// leasing Worker's row in lite_workers, or null: see reclaimSQL) and
// stale_after_ms, first in every statement that uses it. Every lease statement
// shares it, so that a lease by id is the same lease as one a worker's
// loop takes.
var leaseSet = stmt{
	sqlite: `state = 'running', generation = generation + 1, attempts = attempts + 1,
    lease_token = ` + uuidV4SQL + `, locked_by = ?1, leased_at = ` + jobTime("?2").sqlite + `, heartbeat_at = ` + jobTime("?2").sqlite + `,
    worker_id = ?3, stale_after_ms = ?4, first_leased_at = coalesce(first_leased_at, ` + jobTime("?2").sqlite + `), parked = null, parked_on = null`,
	postgres: `state = 'running', generation = generation + 1, attempts = attempts + 1,
    lease_token = gen_random_uuid()::text, locked_by = $1, leased_at = ` + jobTime("$2").postgres + `, heartbeat_at = ` + jobTime("$2").postgres + `,
    worker_id = $3, stale_after_ms = $4, first_leased_at = coalesce(first_leased_at, ` + jobTime("$2").postgres + `), parked = null, parked_on = null`,
}

// leaseFlow is lite_flow for a lease: its now is leased_at (?2).
var leaseFlow = flowCTE(2)

// notExpired is every lease's check of a job's expiry, now being the
// statement's parameter for leased_at: a job past its expiry never
// starts, unless it was leased before (first_leased_at: a job reclaimed
// or retried after its expiry started in time, and runs to its end).
func notExpired(now string) string {
	return `(expires_at is null or expires_at > ` + now + ` or first_leased_at is not null)`
}

// keySlotsCTE is lite_key_slots: for each key in lite_keys of a queue
// with per-key settings, its running jobs, counted once per statement.
// The same text in both dialects.
const keySlotsCTE = `lite_key_slots as materialized (
    select k.queue, k.job_key, f.per_key, f.sequence,
        (select count(*) from lite_jobs r
            where r.state = 'running' and r.job_key is not null and r.queue = k.queue and r.job_key = k.job_key) as running
    from lite_keys k join lite_flow f on f.queue = k.queue
    where k.job_key is not null and (f.per_key > 0 or f.sequence <> ''))`

// inSequence is every lease's check that a keyed job of a queue with a
// sequence is its key's first in enqueue order that is available or
// blocked (with 'block', its first unfinished one: dead or cancelled
// too): a job waiting for its dependencies holds its place. A key with a
// job running is checked apart. The same text in both dialects.
const inSequence = `(coalesce((select f.sequence from lite_flow f where f.queue = lite_jobs.queue), '') = ''
                      or not exists (select 1 from lite_jobs o
                          where o.queue = lite_jobs.queue and o.job_key = lite_jobs.job_key and o.state <> 'done'
                            and o.id < lite_jobs.id and (o.state in ('available', 'blocked')
                              or (select f.sequence from lite_flow f where f.queue = lite_jobs.queue) = 'block')))`

// keyedCTEs are what a lease of many jobs reads of the keys that run
// jobs now, the same text in both dialects but for now (the parameter
// for leased_at) and queues (the lease's filter on a queue's name,
// unqualified).
//
// A key with running jobs (lite_key_slots: a few, one per running job at
// most) is never the walk's: under a per-key limit, lite_key_jobs are its
// first ready jobs in lease order, as many as it has free slots, each
// found from the one before it by an index look-up (a limit clause may
// not read the key it limits), and under a sequence it may start nothing.
// So the walk passes a full key's backlog at the cost of a look-up each,
// and only when it has other jobs to find: lite_walk says whether it may find any,
// a job outside those keys in the lease's queues. That is so while no
// key runs a job, while a queue with available jobs has no running key
// (found by a jump from queue to queue through lite_jobs_available),
// while such a queue has an available key that runs nothing (a jump from
// key to key past the running ones, lite_key_walk), or while the lease's
// available jobs outnumber the keyed ones of those queues: jobs without
// a key, which no index finds apart, counted from index entries alone.
// Otherwise the walk is not taken at all.
func keyedCTEs(now, queues string) string {
	return `lite_keys(queue, job_key) as (
    select distinct queue, job_key from lite_jobs where state = 'running' and job_key is not null` + queues + `),
` + keySlotsCTE + `,
lite_key_jobs(queue, job_key, free, id, priority, run_at) as (
    select s.queue, s.job_key, s.per_key - s.running - 1, a.id, a.priority, a.run_at
    from lite_key_slots s join lite_jobs a on a.id = (select b.id from lite_jobs b
        where b.state = 'available' and b.job_key is not null and b.queue = s.queue and b.job_key = s.job_key and b.run_at <= ` + now + `
        order by b.priority desc, b.run_at, b.id limit 1)
    where s.sequence = '' and s.running < s.per_key
    union all
    select k.queue, k.job_key, k.free - 1, a.id, a.priority, a.run_at
    from lite_key_jobs k join lite_jobs a on a.id = (select b.id from lite_jobs b
        where b.state = 'available' and b.job_key is not null and b.queue = k.queue and b.job_key = k.job_key and b.run_at <= ` + now + `
          and (b.priority < k.priority or b.priority = k.priority and (b.run_at, b.id) > (k.run_at, k.id))
        order by b.priority desc, b.run_at, b.id limit 1)
    where k.free > 0),
lite_ready_queues(queue) as (
    select min(queue) from lite_jobs where state = 'available'
    union all
    select (select min(a.queue) from lite_jobs a where a.state = 'available' and a.queue > r.queue)
    from lite_ready_queues r where r.queue is not null),
lite_key_walk(queue, job_key) as (
    select queue, (select min(a.job_key) from lite_jobs a
        where a.state = 'available' and a.job_key is not null and a.queue = q.queue)
    from (select distinct queue from lite_key_slots) as q
    union all
    select w.queue, (select min(a.job_key) from lite_jobs a
        where a.state = 'available' and a.job_key is not null and a.queue = w.queue and a.job_key > w.job_key)
    from lite_key_walk w where (w.queue, w.job_key) in (select queue, job_key from lite_key_slots)),
lite_walk(needed) as (
    select not exists (select 1 from lite_key_slots)
        or exists (select 1 from lite_ready_queues where queue is not null` + queues + `
            and queue not in (select queue from lite_key_slots))
        or exists (select 1 from lite_key_walk
            where job_key is not null and (queue, job_key) not in (select queue, job_key from lite_key_slots))
        or (select count(*) from lite_jobs where state = 'available'` + queues + `)
        > (select count(*) from lite_jobs a
            where a.state = 'available' and a.job_key is not null and a.queue in (select queue from lite_key_slots)))`
}

// keyedJobs are the jobs of lite_key_jobs that the lease takes: of its
// kinds (the lease's filter, unqualified), and not expired. A key's jobs
// not taken here keep their slots: the limit holds either way.
func keyedJobs(now, kinds string) string {
	return `select id, queue, priority, run_at from lite_jobs
            where id in (select id from lite_key_jobs)` + kinds + ` and ` + notExpired(now)
}

// walkKeyGuard is what the walk checks of a keyed job of a key that runs
// nothing, when its queue has per-key settings, now being the parameter
// for leased_at: under a per-key limit, that its key's ready jobs ahead
// of it in lease order are fewer than the limit, so that a lease takes
// no more of one key than it may start and walks on to other keys' jobs.
// The jobs ahead are counted in two index ranges (higher priority; same
// priority, earlier in line), each read no further than the largest
// limit of any queue. Under a sequence, inSequence. On PostgreSQL the
// counts stay true until the lease commits because the lease first locks
// the row of each keyed queue, as of each limited one (see lockFlowSQL).
// The same text in both dialects.
func walkKeyGuard(now string) string {
	return `
                  and (job_key is null or (
                    (queue, job_key) not in (select queue, job_key from lite_key_slots)
                    and (coalesce((select f.per_key from lite_flow f where f.queue = lite_jobs.queue), 0) = 0
                      or (select count(*) from (select 1 from lite_jobs a
                          where a.state = 'available' and a.queue = lite_jobs.queue and a.job_key = lite_jobs.job_key
                            and a.priority > lite_jobs.priority and a.run_at <= ` + now + `
                          limit (select max(per_key) from lite_flow)) as a)
                      + (select count(*) from (select 1 from lite_jobs a
                          where a.state = 'available' and a.queue = lite_jobs.queue and a.job_key = lite_jobs.job_key
                            and a.priority = lite_jobs.priority and (a.run_at, a.id) < (lite_jobs.run_at, lite_jobs.id)
                          limit (select max(per_key) from lite_flow)) as a)
                      < (select f.per_key from lite_flow f where f.queue = lite_jobs.queue))
                    and ` + inSequence + `))`
}

// leaseSQL claims up to N available jobs in one statement. The filters vary
// with the request, so there are six texts, each prepared once.
//
// Flow control sits inside the statement: the walk skips the queues that
// may start nothing now (paused, full, out of starts), and of the jobs it
// picks each queue keeps as many as it may start, in lease order. On a
// file with no settings lite_flow is empty and both checks pass at once.
// On SQLite the skip is written +queue so that it stays a filter on the
// walk, never the term that picks its index. The jobs of a key that runs
// jobs come from keyedJobs, beside the walk (see keyedCTEs).
//
// On PostgreSQL, hosts lease at once: the walk locks the rows it picks
// and skips those another lease has locked, so that leases never wait for
// one another, and the update checks the state again, on the row as the
// lock found it. The walk sits in array(...) so that it runs once: as
// the join that "id in (...)" becomes, the planner may run it again for
// each row, and every rerun skips the rows the update has just taken and
// picks others, claiming more than the limit. The keyed jobs need no
// lock of their own: a lease of a keyed queue holds its queue's row (see
// lockFlowSQL), and the update locks them.
//
// unlimited makes the PostgreSQL text a lease that needs no lock, for a
// lease outside any transaction: it takes nothing while a queue it may
// take from has a limit or is paused (see leaseOutsideTx), and so reads
// no keys. The SQLite text stays the same.
func leaseSQL(queues queueFilter, byKind, unlimited bool) stmt {
	// Both dialects number their parameters: the filters' follow the
	// five fixed ones, and the limit comes last.
	n := 6
	param := func() (string, string) {
		n++
		return "?" + strconv.Itoa(n-1), "$" + strconv.Itoa(n-1)
	}
	var inQueues, pgInQueues, kinds, pgKinds string
	switch queues {
	case oneQueue:
		s, p := param()
		inQueues = " and queue = " + s
		pgInQueues = " and queue = " + p
	case someQueues:
		s, p := param()
		inQueues = " and queue in (select value from json_each(" + s + "))"
		pgInQueues = " and queue in (select jsonb_array_elements_text(" + p + "::jsonb))"
	}
	pgFilter := pgInQueues
	if unlimited {
		// Uncorrelated, so the planner runs it once, before the walk
		// picks (and locks) any row. A paused queue goes the locked way
		// too: the walk would read its whole backlog to take nothing, and
		// the locked lease would then read it again.
		pgFilter += `
                  and not exists (select from lite_queues where (max_running > 0 or rate > 0 or paused or max_per_key > 0 or sequence <> '')` + pgInQueues + `)`
	}
	if byKind {
		s, p := param()
		kinds = " and kind in (select value from json_each(" + s + "))"
		pgKinds = " and kind in (select jsonb_array_elements_text(" + p + "::jsonb))"
	}
	limit, pgLimit := param()
	// SQLite plans with the value of a limit that is a bare parameter, and
	// so prepares the statement again whenever that value changes: a
	// worker asking for its free slots changed it on most leases, and the
	// lease spent most of its time in the parser. Behind a cast the limit
	// is an expression, planned once; the plan is the same.
	limit = "cast(" + limit + " as integer)"
	// The walk reads queue for the skip, and lite_jobs_available holds it
	// while lite_jobs_ready does not: left to itself, SQLite's planner would
	// read every available job through the former and sort them, on every
	// lease, where the walk across queues should stop after N rows.
	from := "lite_jobs"
	if queues == anyQueue {
		from = "lite_jobs indexed by lite_jobs_ready"
	}
	pgWith, pgWalk, pgWalkLimit, pgKeyed := `with `+leaseFlow.postgres, ``, pgLimit, ``
	if !unlimited {
		pgWith = `with recursive ` + leaseFlow.postgres + `,
` + keyedCTEs("$2", pgInQueues)
		pgWalk = walkKeyGuard("$2")
		pgWalkLimit = `case when (select needed from lite_walk) then ` + pgLimit + `::bigint else 0 end`
		pgKeyed = `
            union all
            ` + keyedJobs("$2", pgKinds)
	}
	return stmt{
		sqlite: `with recursive ` + leaseFlow.sqlite + `,
` + keyedCTEs("?2", inQueues) + `
update lite_jobs set ` + leaseSet.sqlite + `
where id in (
    select id from (
        select id, queue, row_number() over (partition by queue order by priority desc, run_at, id) as nth
        from (select id, queue, priority, run_at from (select id, queue, priority, run_at from ` + from + `
                where state = 'available' and run_at <= ?5` + inQueues + kinds + `
                  and +queue not in (select queue from lite_flow where n <= 0)
                  and ` + notExpired("?2") + walkKeyGuard("?2") + `
                order by priority desc, run_at, id
                limit case when (select needed from lite_walk) then ` + limit + ` else 0 end)
            union all
            ` + keyedJobs("?2", kinds) + `
            order by priority desc, run_at, id
            limit ` + limit + `)) as c
    where nth <= coalesce((select n from lite_flow f where f.queue = c.queue), nth))
returning ` + jobColumns,
		postgres: pgWith + `
update lite_jobs set ` + leaseSet.postgres + `
where id = any(array(
    select id from (
        select id, queue, row_number() over (partition by queue order by priority desc, run_at, id) as nth
        from (select id, queue, priority, run_at from (select id, queue, priority, run_at from lite_jobs
                where state = 'available' and run_at <= $5` + pgFilter + pgKinds + `
                  and queue not in (select queue from lite_flow where n <= 0)
                  and ` + notExpired("$2") + pgWalk + `
                order by priority desc, run_at, id
                limit ` + pgWalkLimit + `
                for update skip locked) as p` + pgKeyed + `
            order by priority desc, run_at, id
            limit ` + pgLimit + `) as u) as c
    where nth <= coalesce((select n from lite_flow f where f.queue = c.queue), nth)))
  and state = 'available'
  and run_at <= $5 and ` + notExpired("$2") + `
returning ` + jobColumns,
	}
}

// leaseSQLs are the lease texts by queue filter, by kind filter (1: by
// kind), and by whether they take nothing from a limited queue (1: so).
var leaseSQLs = func() (texts [3][2][2]stmt) {
	for _, queues := range []queueFilter{anyQueue, oneQueue, someQueues} {
		for byKind := range 2 {
			for unlimited := range 2 {
				texts[queues][byKind][unlimited] = leaseSQL(queues, byKind == 1, unlimited == 1)
			}
		}
	}
	return texts
}()

// Lease claims up to req.Max available jobs whose run_at has come, highest
// priority first, and returns them running under fresh leases: generation
// bumped, a new lease token, an attempt counted.
func (q *Queue) Lease(ctx context.Context, req LeaseRequest) ([]*Job, error) {
	jobs, err := q.lease(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("lease %s: %w", queueNames(req.Queues), classify(err))
	}
	return jobs, nil
}

func (q *Queue) lease(ctx context.Context, req LeaseRequest) ([]*Job, error) {
	args, err := q.leaseArgs(&req)
	if err != nil {
		return nil, err
	}
	queues, byKind := filterFor(req.Queues), len(req.Kinds) > 0
	texts := leaseSQLs[queues][b2i(byKind)]
	jobs, err := q.leaseOutsideTx(ctx, q.sql(texts[1]), func() []any { return args(q.writer()) })
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 {
		query := q.sql(texts[0])
		err = q.underFlow(ctx, query, nullList(req.Queues), sql.NullInt64{}, req.StaleAfter, func(c queryer) error {
			jobs, err = leaseRows(ctx, c, query, args(c))
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	sortLeased(jobs)
	return jobs, nil
}

// sortLeased puts jobs in lease order: returning gives no order, and jobs
// are handed out as the lease's walk chose them. Compare, never
// subtract: priorities span all of int.
func sortLeased(jobs []*Job) {
	slices.SortFunc(jobs, func(a, b *Job) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// leaseArgs checks req, fills in its defaults, and returns a function
// that gives the arguments of its lease statement: called once the
// lease's lock is held, it sets the lease's time into them, so that a
// lease that waited for the lock starts its jobs at the time it took
// them, not lapsed already by the wait.
func (q *Queue) leaseArgs(req *LeaseRequest) (func(c queryer) []any, error) {
	switch {
	case req.Max < 0:
		return nil, fmt.Errorf("negative Max %d", req.Max)
	case req.Max == 0:
		req.Max = 1
	}
	switch {
	case req.StaleAfter < 0:
		return nil, fmt.Errorf("negative StaleAfter %s", req.StaleAfter)
	case req.StaleAfter == 0:
		req.StaleAfter = DefaultStaleAfter
	case req.StaleAfter < time.Millisecond:
		return nil, fmt.Errorf("StaleAfter %s is under a millisecond", req.StaleAfter)
	}
	if req.LockedBy == "" {
		req.LockedBy = q.opts.Identity
	}
	args := []any{req.LockedBy, nil, sql.NullString{String: req.worker, Valid: req.worker != ""}, req.StaleAfter.Milliseconds(), nil}
	switch filterFor(req.Queues) {
	case oneQueue:
		args = append(args, req.Queues[0])
	case someQueues:
		args = append(args, jsonList(req.Queues))
	}
	if len(req.Kinds) > 0 {
		args = append(args, jsonList(req.Kinds))
	}
	args = append(args, req.Max)
	return func(c queryer) []any {
		now := q.nowOn(c).UnixMilli()
		args[1], args[4] = now, now
		if req.slots != nil {
			args[len(args)-1] = max(req.slots(), 0)
		}
		return args
	}, nil
}

// leaseOutsideTx runs query, a lease that takes nothing from a limited
// queue, as one statement outside any transaction: on PostgreSQL, a lease
// from queues without limits needs neither underFlow's lock nor its
// transaction, and so costs one round trip, not four. Whether the queues
// have limits is read by the statement itself, never from a cache that
// another process could make stale. It finds no job where the queues
// have limits or a pause, and the caller then leases under underFlow; so
// does a lease that finds the queues empty, which then costs five round
// trips. SQLite leases under underFlow alone: its lease needs no lock,
// and on a FULL file commits unsynced there.
func (q *Queue) leaseOutsideTx(ctx context.Context, query string, args func() []any) ([]*Job, error) {
	if !q.engine.onServer() {
		return nil, nil
	}
	return leaseRows(ctx, q.writer(), query, args())
}

// leaseRows runs a lease statement and reads the jobs it returns.
func leaseRows(ctx context.Context, c queryer, query string, args []any) ([]*Job, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	// An open Rows of a returning statement holds the write lock: read all
	// and close at once.
	var jobs []*Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, errors.Join(rows.Err(), rows.Close())
}

// queueNames names a lease's queues for its errors.
func queueNames(queues []string) string {
	if len(queues) == 0 {
		return "every queue"
	}
	return strings.Join(queues, ",")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func jsonList(list []string) string {
	b, _ := json.Marshal(list) // a []string always marshals
	return string(b)
}

// leaseByIDSQL leases one job by its id, whatever its run_at, if it is
// available, of a kind the worker handles (a null list: any kind), of a
// queue that may start a job now, and of a key that may (keyByID).
var leaseByIDSQL = stmt{
	sqlite: `with ` + leaseFlow.sqlite + `,
` + keyByID("?5") + `
update lite_jobs set ` + leaseSet.sqlite + `
where id = ?5 and state = 'available'
  and (?6 is null or kind in (select value from json_each(?7)))
  and coalesce((select n from lite_flow f where f.queue = lite_jobs.queue), 1) > 0
  and ` + notExpired("?2") + keyFree + `
returning ` + jobColumns,
	postgres: `with ` + leaseFlow.postgres + `,
` + keyByID("$5") + `
update lite_jobs set ` + leaseSet.postgres + `
where id = $5 and state = 'available'
  and ($6::text is null or kind in (select jsonb_array_elements_text($7::jsonb)))
  and coalesce((select n from lite_flow f where f.queue = lite_jobs.queue), 1) > 0
  and ` + notExpired("$2") + keyFree + `
returning ` + jobColumns,
}

// keyByID is lite_key_slots for the key of job id (its parameter), if
// it has one.
func keyByID(id string) string {
	return `lite_keys(queue, job_key) as (select queue, job_key from lite_jobs where id = ` + id + `),
` + keySlotsCTE
}

// keyFree is leaseByIDSQL's check of its job's key: that it runs fewer
// jobs than its limit (one, under a sequence), and inSequence.
const keyFree = `
  and not exists (select 1 from lite_key_slots s
      where s.running >= case when s.sequence <> '' then 1 else s.per_key end)
  and (job_key is null or ` + inSequence + `)`

// leaseByID leases job id for a worker that handles kinds (nil: every
// kind), whatever its run_at: "run it now". An unknown id gives
// ErrNotFound, a job that is not available ErrInvalidState, and one of a
// kind not in kinds, or of a queue paused or at its limit, an error that
// says so; none of them changes the job.
func (q *Queue) leaseByID(ctx context.Context, id int64, kinds []string, lockedBy string, staleAfter time.Duration) (*Job, error) {
	list := nullList(kinds)
	var j *Job
	query := q.sql(leaseByIDSQL)
	err := q.underFlow(ctx, query, sql.NullString{}, sql.NullInt64{Int64: id, Valid: true}, staleAfter, func(c queryer) error {
		var err error
		now := q.nowMillis() // read once the lease's lock is held
		// No worker row: RunJob does not announce, so the job is judged
		// by its own heartbeat alone.
		j, err = scanJob(c.QueryRowContext(ctx, query,
			lockedBy, now, nil, staleAfter.Milliseconds(), id, list, list))
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, q.whyNotLeased(ctx, id, kinds)
	}
	if err != nil {
		return nil, classify(err)
	}
	return j, nil
}

var whyNotLeasedSQL = stmt{
	sqlite:   whyNotLeasedText("?1", "?2", "0"),
	postgres: whyNotLeasedText("$1", "$2", "false"),
}

// whyNotLeasedText reads job id (the first parameter) as of now (the
// second) for whyNotLeased; no is the dialect's false.
func whyNotLeasedText(id, now, no string) string {
	return `select j.state, j.kind, j.queue, coalesce(f.paused, ` + no + `), j.deps_pending,
    j.expires_at is not null and j.expires_at <= ` + now + ` and j.first_leased_at is null, coalesce(j.expires_at, 0),
    coalesce(j.job_key, ''), coalesce(f.max_per_key, 0), coalesce(f.sequence, ''),
    (select count(*) from lite_jobs r where r.state = 'running' and r.queue = j.queue and r.job_key = j.job_key),
    (select count(*) from lite_jobs a where a.state = 'available' and a.queue = j.queue and a.job_key = j.job_key
        and ((a.priority > j.priority and a.run_at <= ` + now + `) or (a.priority = j.priority and (a.run_at, a.id) < (j.run_at, j.id)))),
` + sequenceAhead + `
from lite_jobs j left join lite_queues f on f.queue = j.queue where j.id = ` + id
}

// sequenceAhead is the job that holds a keyed job j back in its queue's
// sequence, as leaseGuard tells it, or 0: its key's job running, else the
// first of its key before it that is available or blocked (or not done,
// under 'block').
const sequenceAhead = `    coalesce((select o.id from lite_jobs o
        where o.queue = j.queue and o.job_key = j.job_key and o.state <> 'done' and o.id <> j.id
          and (o.state = 'running' or (o.id < j.id and (o.state in ('available', 'blocked') or f.sequence = 'block')))
        order by o.state = 'running' desc, o.id limit 1), 0)`

// notLeased is what whyNotLeased reads of a job a lease by id missed.
type notLeased struct {
	state               State
	kind, queue         string
	paused              bool
	pending             int
	expired             bool
	expiresAt           int64
	key                 string
	perKey              int
	sequence            string
	keyRunning, keyNext int // its key's jobs running, and ready ahead of it in lease order
	ahead               int64
}

// whyNotLeased reads why a lease of job id by a worker handling kinds
// matched no row. It reads after the guarded write, never before it: the
// write alone decides, and this only explains, naming the first reason
// that holds in the order the lease checks them: the job's state, its
// kind, its queue paused, its expiry, its key's sequence or limit, and
// else its queue's limits.
func (q *Queue) whyNotLeased(ctx context.Context, id int64, kinds []string) error {
	var n notLeased
	err := q.r.QueryRowContext(ctx, q.sql(whyNotLeasedSQL), id, q.nowMillis()).Scan(&n.state, &n.kind, &n.queue, &n.paused,
		&n.pending, &n.expired, &n.expiresAt, &n.key, &n.perKey, &n.sequence, &n.keyRunning, &n.keyNext, &n.ahead)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return classify(err)
	case n.state == StateBlocked:
		return fmt.Errorf("%w: it is blocked, waiting for %d of the jobs it depends on", ErrInvalidState, n.pending)
	case n.state != StateAvailable:
		return fmt.Errorf("%w: it is not available (it is %s now)", ErrInvalidState, n.state)
	case len(kinds) > 0 && !slices.Contains(kinds, n.kind):
		return fmt.Errorf("the worker has no handler for its kind %q", n.kind)
	case n.paused:
		return fmt.Errorf("its queue %q is paused", n.queue)
	case n.expired:
		return fmt.Errorf("it expired unstarted at %s, and an expired job never starts",
			fromMillis(n.expiresAt).UTC().Format(time.RFC3339Nano))
	case n.key != "" && n.sequence != "" && n.ahead != 0:
		return fmt.Errorf("its key %q runs in sequence, and job %d of that key comes first", n.key, n.ahead)
	case n.key != "" && n.perKey > 0 && n.keyRunning+n.keyNext >= n.perKey:
		return fmt.Errorf("its key %q is at its limit of %d in queue %q (%d running, %d ready ahead of it)",
			n.key, n.perKey, n.queue, n.keyRunning, n.keyNext)
	}
	return fmt.Errorf("its queue %q is at its limit", n.queue)
}

// renewSQL extends every listed lease that is still current, in one
// statement; the pairs it returns are the leases renewed. On PostgreSQL
// it locks the rows first, and skips those another transaction holds: a
// heartbeat that waited for one row while holding the others took part
// in deadlocks (a step's record locks its job's row after its fn may
// have locked others), and every job of the worker waited behind the
// slowest commit among them. Renew beats each skipped lease again on
// its own (renewWaitingSQL).
var renewSQL = stmt{
	sqlite: `update lite_jobs set heartbeat_at = ` + jobTime("?1").sqlite + `
where state = 'running'
  and (id, generation) in (select value ->> 0, value ->> 1 from json_each(?2))
returning id, generation`,
	postgres: renewPostgres("for no key update skip locked"),
}

// renewWaitingSQL, on PostgreSQL, renews one lease whose row renewSQL
// found locked: it waits for the row, holding no other, and stores the
// time once it holds it (ranAt), so that a renewal that waited behind a
// transaction holding the row records when it landed, not when it began.
var renewWaitingSQL = stmt{
	postgres: renewPostgres("for no key update"),
}

// renewPostgres is PostgreSQL's renewal with lock, the locking clause
// that takes the rows.
func renewPostgres(lock string) string {
	return `with renewed as (select id from lite_jobs
where state = 'running'
  and (id, generation) in (select (value ->> 0)::bigint, (value ->> 1)::bigint from jsonb_array_elements($2::jsonb))
` + lock + `)
update lite_jobs set heartbeat_at = ` + jobTime(ranAt("$1")).postgres + `
from renewed where lite_jobs.id = renewed.id
returning lite_jobs.id, lite_jobs.generation`
}

// ranAt is the time a PostgreSQL statement's row is written, now being
// the parameter read just before the statement was sent: now plus how
// long the statement has run, on the server's own clock, when that is
// more than shortWait, so that the time stored comes after a wait for a
// lock the statement took before it (see renewSQL). A shorter run is
// left out, as SQLite's waits are (see Queue.noteWait).
func ranAt(now string) string {
	return `(` + now + ` + (select case when ran > ` + strconv.FormatInt(shortWait.Milliseconds(), 10) + ` then ran else 0 end
    from (select (extract(epoch from clock_timestamp() - statement_timestamp()) * 1000)::bigint as ran) as r))`
}

// Renew records a heartbeat for each lease in one statement. The result
// has one entry per lease: nil if renewed, ErrLeaseLost if the lease is no
// longer the job's current one. A lease appears at most once per call.
func (q *Queue) Renew(ctx context.Context, leases []Lease) ([]error, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	pairs := make([][2]int64, len(leases))
	for i, l := range leases {
		pairs[i] = [2]int64{l.JobID, l.Generation}
	}
	list, _ := json.Marshal(pairs) // int pairs always marshal
	renewed, err := q.matched(ctx, q.sql(renewSQL), func() []any { return []any{q.nowMillis(), string(list)} })
	if err != nil {
		return nil, fmt.Errorf("renew: %w", err)
	}
	results := make([]error, len(leases))
	for i, l := range leases {
		if renewed[pairs[i]] {
			continue
		}
		if q.engine.onServer() { // skipped, perhaps, for a lock on its row
			one, _ := json.Marshal([][2]int64{pairs[i]})
			held, err := q.matched(ctx, q.sql(renewWaitingSQL), func() []any { return []any{q.nowMillis(), string(one)} })
			if err != nil {
				return nil, fmt.Errorf("renew: %w", err)
			}
			if held[pairs[i]] {
				continue
			}
		}
		results[i] = leaseLost(l)
	}
	return results, nil
}

// matched runs a fenced statement over a list of leases and returns the
// (id, generation) pairs it returned: the leases whose guard held. args
// gives its arguments once its lock is held (see write).
func (q *Queue) matched(ctx context.Context, query string, args func() []any) (held map[[2]int64]bool, err error) {
	err = q.write(ctx, query, func(c conn) (err error) {
		held, err = matchedOn(ctx, c, query, args()...)
		return err
	})
	if err != nil {
		return nil, classify(err)
	}
	return held, nil
}

// matchedOn runs matched's statement on c and reads the pairs it returns.
func matchedOn(ctx context.Context, c conn, query string, args ...any) (map[[2]int64]bool, error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	held := map[[2]int64]bool{}
	for rows.Next() {
		var pair [2]int64
		if err := rows.Scan(&pair[0], &pair[1]); err != nil {
			rows.Close()
			return nil, err
		}
		held[pair] = true
	}
	return held, errors.Join(rows.Err(), rows.Close())
}

// flowCTE is what each queue with settings lets a lease take now, for
// every statement that leases or waits: n is how many of its jobs may
// start (0 while paused, full or out of starts), full says that it runs
// as many as it may, and opens_at is when its rate window ends, once the
// window has no starts left. now is the number of the statement's
// parameter for the current time.
//
// The rate is counted in fixed windows laid end to end from the queue's
// first start (lite_queues_count_start in the migrations counts the
// starts, and a change of rate starts the windows afresh). A window that
// opens after now is one a clock stepped back left behind: it counts as
// over, so the queue starts a fresh one at once rather than wait for the
// clock to catch up with it. Fixed windows
// are chosen over a token bucket because its state is two
// integers that every engine updates exactly in the lease's own
// statement, with no fractional tokens, and a window starts exactly Rate
// jobs, which tests can pin; its cost is a burst of up to twice Rate
// around a window's end, which a period shorter than the downstream's own
// keeps in check.
//
// Running jobs are counted only for queues with a MaxRunning, so a file
// with no settings counts nothing. The count reads running jobs through
// their partial index. It is the truth on SQLite, where the statement
// holds the one write lock while it reads; on PostgreSQL the lease locks
// the limited queues' rows first (see lockFlowSQL).
func flowCTE(now int) stmt {
	sqliteNow, pgNow := "?"+strconv.Itoa(now), "$"+strconv.Itoa(now)
	return stmt{
		sqlite: `lite_flow as materialized (
    select queue, paused, max_per_key as per_key, sequence,
        max_running > 0 and running >= max_running as full,
        case when rate > 0 and rate_left <= 0 then window_start + rate_per_ms end as opens_at,
        case when paused then 0 else min(
            case when max_running > 0 then max_running - running else 9223372036854775807 end,
            case when rate > 0 then rate_left else 9223372036854775807 end) end as n
    from (select queue, paused, max_running, rate, rate_per_ms, window_start, max_per_key, sequence,
            case when max_running > 0 then (select count(*) from lite_jobs r
                where r.state = 'running' and r.queue = s.queue) else 0 end as running,
            rate - case when ` + sqliteNow + ` >= window_start - 1000 and ` + sqliteNow + ` < window_start + rate_per_ms then window_starts else 0 end as rate_left
        from lite_queues s))`,
		postgres: `lite_flow as materialized (
    select queue, paused, max_per_key as per_key, sequence,
        max_running > 0 and running >= max_running as full,
        case when rate > 0 and rate_left <= 0 then window_start + rate_per_ms end as opens_at,
        case when paused then 0 else least(
            case when max_running > 0 then max_running - running else 9223372036854775807 end,
            case when rate > 0 then rate_left else 9223372036854775807 end) end as n
    from (select queue, paused, max_running, rate, rate_per_ms, window_start, max_per_key, sequence,
            case when max_running > 0 then (select count(*) from lite_jobs r
                where r.state = 'running' and r.queue = s.queue) else 0 end as running,
            rate - case when ` + pgNow + ` >= window_start - 1000 and ` + pgNow + ` < window_start + rate_per_ms then window_starts else 0 end as rate_left
        from lite_queues s) s)`,
	}
}

// lockFlowSQL locks, on PostgreSQL, the rows of the limited queues a
// lease may take from (those in a list, or the queue of one job; null:
// every one), in one order so that two leases never wait for each other
// in a cycle. Two leases that could both pass a limit by counting at once
// then count one after the other, each in a statement that starts after
// the lock, and so sees what the other committed. SQLite needs no lock:
// its lease holds the file's one write lock while it counts.
var lockFlowSQL = stmt{
	postgres: `select queue from lite_queues
where (max_running > 0 or rate > 0 or max_per_key > 0 or sequence <> '')
  and ($1::jsonb is null or queue in (select jsonb_array_elements_text($1::jsonb)))
  and ($2::bigint is null or queue = (select queue from lite_jobs where id = $2))
order by queue
for update`,
}

// underFlow runs lease, a statement that reads lite_flow, so that the
// limits it reads stay true until it commits: on PostgreSQL in a
// transaction that first locks the limited queues it may take from (a
// queue list, or the queue of job id; null for either: no filter). query
// is the text lease runs. lease reads the clock itself, once the lock is
// held. staleAfter is the lease's promise, which bounds how long a host
// frozen inside the transaction may hold the lock (see txBounds).
func (q *Queue) underFlow(ctx context.Context, query string, queues sql.NullString, id sql.NullInt64, staleAfter time.Duration, lease func(queryer) error) error {
	if !q.engine.onServer() {
		return q.writeIn(ctx, query, true, func(c conn) error { return lease(c) })
	}
	// As on the writer, a statement that has started runs to its end: a
	// cancel that cut the lease short could leave its row locks held by a
	// server backend that has not yet seen the connection go. The server
	// ends it by ctx's deadline instead (see boundServerTx).
	stmtCtx, err := uncancelled(ctx)
	if err != nil {
		return err
	}
	b := q.txBounds()
	if staleAfter > 0 {
		b.idle = min(b.idle, staleAfter) // a frozen host stops the others for no longer than its own promise
	}
	return q.withTxBounded(ctx, b, func(tx txConn) error {
		if _, err := tx.ExecContext(stmtCtx, q.sql(lockFlowSQL), queues, id); err != nil {
			return err
		}
		if afterFlowLock != nil {
			afterFlowLock()
		}
		return lease(tx)
	})
}

// afterFlowLock, when a test sets it, runs in a PostgreSQL transaction of
// flow control once it holds its locks (a lease of a limited queue, the
// queues' rows; a change of settings, lite_queues): a host frozen there.
var afterFlowLock func()

// leaseWithoutSync reports whether a lease may commit without syncing: on
// a file Open set to FULL. A file with NORMAL syncs no commit already, and
// on New's caller-owned pool lite does not know the level to restore.
func (q *Queue) leaseWithoutSync() bool {
	return !q.engine.onServer() && q.owned && q.opts.Synchronous == SyncFull
}

// roundTx runs fn in one transaction on the writer; with unsynced, one
// that commits without a sync (see underNormalSync).
func (q *Queue) roundTx(ctx context.Context, unsynced bool, fn func(tx txConn) error) error {
	if unsynced {
		return q.underNormalSync(ctx, fn)
	}
	return q.withTx(ctx, fn)
}

// underNormalSync runs fn, a round of leases alone, in a transaction on the writer that commits
// with synchronous=NORMAL, then sets the writer back to FULL before anyone
// else may use it: the connection stays held throughout, so no enqueue or
// ack ever commits at the lower level. SQLite refuses to change the level
// inside a transaction, hence the pragmas around it.
//
// A lease needs no sync to be safe. Its commit is in the WAL in order, and
// the next FULL commit (an ack, an enqueue) syncs the WAL file, this
// commit's frames with it; so an ack that survives a power loss implies its
// lease did. If the power goes before any later FULL commit, the lease is
// lost and the job is available again at its old generation, as after any
// crash of the worker: fencing refuses whatever the lost lease's holder
// still writes, and the job runs again. Skipping the sync takes one fsync
// (1.8 to 3.4 ms on this machine) off the latency from enqueue to start.
func (q *Queue) underNormalSync(ctx context.Context, fn func(tx txConn) error) error {
	ctx, err := uncancelled(ctx)
	if err != nil {
		return err
	}
	c, err := q.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "pragma synchronous = normal"); err != nil {
		return err
	}
	err = func() error {
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer tx.Rollback()
		if err := fn(txConn{tx: tx, stmts: &q.stmts}); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	}()
	if _, restoreErr := c.ExecContext(ctx, "pragma synchronous = full"); restoreErr != nil {
		// A writer left at NORMAL would commit acks unsynced: the pool
		// drops it, and the next connection opens with the DSN's FULL.
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		return errors.Join(err, fmt.Errorf("restore synchronous = full: %w", restoreErr))
	}
	return err
}
