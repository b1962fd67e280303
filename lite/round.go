package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// On PostgreSQL, a worker with one lane refills the slots that a group of
// done-acks frees in the statement that commits those acks: a round is
// one round trip and one commit, where the ack, its notification and the
// next lease took three round trips and two commits, and the slots pass
// straight from the jobs acked to the jobs leased. Each ack keeps its
// guard (id, generation, state='running') and its own result, from the
// pairs the statement returns; the lease is the unlimited lease, with its
// guards, and takes nothing from a queue with limits or a pause, which
// the worker's loop then leases under the queues' lock as before.

// ackAndLeaseSQL acks a list of leases done and leases up to N jobs in
// one statement: ackDoneManySQL's text and leaseSQLs[queues][byKind][1]'s
// side by side in a WITH, both seeing the same snapshot, so that neither
// sees the other's rows (the acks' rows are running, the lease's
// available: no row is both). Its parameters are the lease's, then the
// acks' list; the acks' time is the lease's. It returns the pairs acked
// (id, generation, then nulls), and the jobs leased (two nulls, then the
// job's columns).
func ackAndLeaseSQL(queues queueFilter, byKind bool) stmt {
	lease := leaseSQL(queues, byKind, true).postgres
	update, ok := strings.CutPrefix(lease, "with "+leaseFlow.postgres+"\n")
	if !ok {
		panic("lite: the lease's text does not begin with its flow")
	}
	// The lease's fixed five, its filters, and its limit.
	list := "$" + strconv.Itoa(5+b2i(queues == oneQueue)+b2i(byKind)+2)
	nulls := strings.Repeat(", null", strings.Count(jobColumns, ",")+1)
	return stmt{postgres: `with ` + leaseFlow.postgres + `,
acked as (` + ackDoneManyPostgres("$2", list) + `),
leased as (` + update + `)
select id, generation` + nulls + ` from acked
union all
select null, null, leased.* from leased`}
}

// ackAndLeaseSQLs are ackAndLeaseSQL's texts by queue filter (a lane has
// every queue or one) and kind filter (1: by kind).
var ackAndLeaseSQLs = func() (texts [2][2]stmt) {
	for _, queues := range []queueFilter{anyQueue, oneQueue} {
		for byKind := range 2 {
			texts[queues][byKind] = ackAndLeaseSQL(queues, byKind == 1)
		}
	}
	return texts
}()

// refill is a worker's part in its group commits' rounds.
type refill struct {
	w          *Worker
	lane       *lane
	handlerCtx context.Context
	// armed says that more jobs may wait: the loop's last lease filled
	// every slot it asked for, and no round since took fewer than its
	// acks freed.
	armed atomic.Bool

	mu      sync.RWMutex // held shared by a round until its jobs started, exclusively by stop
	stopped bool
}

// startRefill has the worker's group commits lease on PostgreSQL, for a
// worker with one lane (with several, which lane a freed slot should go
// to is the loop's choice). It returns nil where they do not. stop ends
// it before the worker's shutdown, so that no round starts a job after
// the shutdown began waiting for the worker's jobs.
func (w *Worker) startRefill(handlerCtx context.Context) *refill {
	if w.q.engine != enginePostgres || len(w.lanes) != 1 {
		return nil
	}
	r := &refill{w: w, lane: w.lanes[0], handlerCtx: handlerCtx}
	if c := w.acks.Load(); c != nil {
		c.refill.Store(r)
	}
	return r
}

// arm records whether the loop's lease found a backlog; a nil refill
// ignores it.
func (r *refill) arm(backlog bool) {
	if r != nil {
		r.armed.Store(backlog)
	}
}

func (r *refill) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
}

// round commits acks and leases a job for each slot they free, and
// starts each job in the slot of one of the runs acked. ok is false if
// the refill has stopped, and nothing was written.
func (r *refill) round(ctx context.Context, acks []Done) (results []error, ok bool, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.stopped {
		return nil, false, nil
	}
	w := r.w
	results, jobs, err := w.q.ackAndLease(ctx, acks, LeaseRequest{Queues: r.lane.queues, Kinds: w.kindList,
		Max: len(acks), LockedBy: w.opts.Identity, StaleAfter: w.opts.StaleAfter})
	if err != nil {
		return nil, true, err
	}
	if len(jobs) < len(acks) {
		r.armed.Store(false) // the loop leases again when a slot frees
	}
	r.startAll(acks, jobs)
	return results, true, nil
}

// ackAndLease runs a round on PostgreSQL: it acks acks done, each fenced
// on its own as AckDoneMany's are and with AckDoneMany's results, and
// leases up to req.Max jobs of req's single queue (or every queue) from
// queues without limits, in one statement.
func (q *Queue) ackAndLease(ctx context.Context, acks []Done, req LeaseRequest) (results []error, jobs []*Job, err error) {
	results, list, err := q.ackList(acks)
	if err != nil {
		return nil, nil, fmt.Errorf("ack done: %w", err)
	}
	args, err := q.leaseArgs(&req)
	if err != nil {
		return nil, nil, err
	}
	query := q.sql(ackAndLeaseSQLs[filterFor(req.Queues)][b2i(len(req.Kinds) > 0)])
	acked, jobs, err := roundRows(ctx, q.writer(), query, append(args(q.writer()), list))
	if err != nil {
		return nil, nil, fmt.Errorf("ack done: %w", classify(err))
	}
	sortLeased(jobs)
	return q.ackedResults(acks, results, acked), jobs, nil
}

// startAll starts each job leased in the slot of a run acked.
func (r *refill) startAll(acks []Done, jobs []*Job) {
	w := r.w
	for i, j := range jobs {
		l := acks[i].Lease
		w.mu.Lock()
		from := w.active[leaseKey{l.JobID, l.Generation}]
		w.mu.Unlock()
		w.startIn(r.handlerCtx, r.lane, j, from)
	}
}

// roundRows runs a round and reads the pairs it acked and the jobs it
// leased. Each row is scanned twice: first for the pair, then, if it has
// none, for the job.
func roundRows(ctx context.Context, c queryer, query string, args []any) (acked map[[2]int64]bool, jobs []*Job, err error) {
	rows, err := c.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	acked = map[[2]int64]bool{}
	pair := make([]any, len(cols))
	var id, generation sql.NullInt64
	pair[0], pair[1] = &id, &generation
	for i := 2; i < len(pair); i++ {
		pair[i] = new(any)
	}
	for rows.Next() {
		if err := rows.Scan(pair...); err != nil {
			return nil, nil, err
		}
		if id.Valid {
			acked[[2]int64{id.Int64, generation.Int64}] = true
			continue
		}
		j, err := scanJob(skipTwo{rows})
		if err != nil {
			return nil, nil, err
		}
		jobs = append(jobs, j)
	}
	return acked, jobs, errors.Join(rows.Err(), rows.Close())
}

// skipTwo scans a round's job row past its two pair columns.
type skipTwo struct{ rows *sql.Rows }

func (s skipTwo) Scan(dest ...any) error {
	return s.rows.Scan(append([]any{new(any), new(any)}, dest...)...)
}
