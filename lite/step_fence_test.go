package lite_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// On PostgreSQL a cancel that comes while a step's commit is under way
// waits for it: it never returns before writes of the lease it ends
// appear, and a record never lands after its lease has ended.
func TestACancelWaitsForAStepsCommitUnderWay(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := t.Context()
	q, _ := e.mustOpen(t, newFakeClock())
	// The app's table holds its commit in a deferred trigger until the
	// test lets it go: a slow commit (a synchronous standby, a deferred
	// check) without a sleep.
	_, err := q.DB().ExecContext(ctx, `create table notes (body text);
create function notes_commit() returns trigger language plpgsql as $$
begin perform pg_advisory_xact_lock(4242); return null; end $$;
create constraint trigger notes_commit after insert on notes deferrable initially deferred
for each row execute function notes_commit();`)
	is.NoErr(err)
	gate, gatePID := appTx(t, q)
	_, err = gate.ExecContext(ctx, `select pg_advisory_xact_lock(4242)`)
	is.NoErr(err)

	id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	job := mustLeaseOne(t, q, "default")
	hctx := lite.HandlerContext(ctx, q, job.Lease(), func(error) {})
	stepped := make(chan error, 1)
	go func() {
		_, err := lite.RunStepTx(hctx, "note", func(ctx context.Context, tx *sql.Tx) (int, error) {
			_, err := tx.ExecContext(ctx, `insert into notes values ('x')`)
			return 1, err
		})
		stepped <- err
	}()
	waitUntilBlockedBy(t, q, gatePID) // the step's commit waits at the gate

	cancelled := make(chan error, 1)
	go func() { cancelled <- q.Cancel(ctx, id) }()
	for waiting := 0; waiting == 0; {
		select {
		case err := <-cancelled:
			t.Fatalf("the cancel returned (%v) while the step's commit was under way", err)
		case <-time.After(10 * time.Millisecond):
		}
		is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from pg_stat_activity
where wait_event_type = 'Lock' and query like '%cancelled%' and pid <> pg_backend_pid()`).Scan(&waiting))
	}
	is.NoErr(gate.Commit())
	is.NoErr(<-stepped) // recorded under the lease that held the job then
	is.NoErr(<-cancelled)
	is.Equal(mustGet(t, q, id).State, lite.StateCancelled)
	is.Equal(countRows(t, q, `select count(*) from notes`), 1)
}

// A heartbeat over several jobs never deadlocks with a step of one of
// them whose fn holds another's row (an enqueue that depends on it, an
// app's select for share): the heartbeat takes the rows it can, holding
// none while it waits for the others, and the step's record then takes
// its own job's row. A heartbeat that waited for one row while holding
// the rest deadlocked with the record, every time.
func TestAHeartbeatNeverDeadlocksWithAStepThatHoldsAnotherJobsRow(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := holdAnotherJobsRowInAStep(t)
	q, stepping, other, pid, goOn, stepped := h.q, h.stepping, h.other, h.pid, h.goOn, h.stepped
	renewed := make(chan error, 1)
	var results []error
	go func() {
		var err error
		results, err = q.Renew(ctx, []lite.Lease{stepping.Lease(), other.Lease()})
		renewed <- err
	}()
	// The heartbeat waits for the other job's row (one that gave that
	// lease up as lost returns instead); then the step records, taking
	// its own job's row.
	var renewErr error
	returned := false
	for blocked := 0; blocked == 0 && !returned; {
		select {
		case renewErr = <-renewed:
			returned = true
		case <-time.After(10 * time.Millisecond):
			is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from pg_stat_activity where $1 = any(pg_blocking_pids(pid))`, pid).Scan(&blocked))
		}
	}
	close(goOn)
	is.NoErr(<-stepped)
	if !returned {
		renewErr = <-renewed
	}
	is.NoErr(renewErr)
	is.Equal(results, []error{nil, nil}) // both beat
	steps, err := q.Steps(ctx, stepping.ID)
	is.NoErr(err)
	is.Equal(len(steps), 1)
}

// A bulk cancel that takes a job's row while a step of that job's holds
// another job's row, and then wants that one, deadlocks with the step's
// record: the server ends the cancel, which waited first, and the cancel
// runs again once the step has committed, rather than failing with
// nothing cancelled.
func TestABulkCancelThatDeadlocksWithAStepRunsAgain(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	h := holdAnotherJobsRowInAStep(t)
	q, stepping, other, pid, goOn, stepped := h.q, h.stepping, h.other, h.pid, h.goOn, h.stepped
	is.True(stepping.ID < other.ID) // the cancel takes the stepping job's row first
	type outcome struct {
		n   int64
		err error
	}
	cancelled := make(chan outcome, 1)
	go func() {
		n, err := q.Bulk(ctx, lite.BulkCancel, lite.Filter{IDs: []int64{stepping.ID, other.ID}})
		cancelled <- outcome{n, err}
	}()
	waitUntilBlockedBy(t, q, pid) // the cancel holds the stepping job's row and waits for the other
	close(goOn)                   // the step's record wants the stepping job's row: a deadlock
	is.NoErr(<-stepped)
	got := <-cancelled
	is.NoErr(got.err)
	is.Equal(got.n, int64(2))
	is.Equal(mustGet(t, q, stepping.ID).State, lite.StateCancelled)
	is.Equal(mustGet(t, q, other.ID).State, lite.StateCancelled)
	steps, err := q.Steps(ctx, stepping.ID)
	is.NoErr(err)
	is.Equal(len(steps), 1) // recorded before the cancel
}

// stepHoldingARow is a step of job stepping whose fn holds job other's
// row (for share) in the step's transaction, until goOn is closed; its
// session is pid, and its outcome comes on stepped.
type stepHoldingARow struct {
	q               *lite.Queue
	stepping, other *lite.Job
	pid             int64
	goOn            chan struct{}
	stepped         chan error
}

// holdAnotherJobsRowInAStep leases two jobs on a server, the first the
// one with the lower id, and returns once a step of the first holds the
// second's row.
func holdAnotherJobsRowInAStep(t *testing.T) stepHoldingARow {
	t.Helper()
	e := onPostgres(t)
	q, _ := e.mustOpen(t, newFakeClock())
	mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	mustEnqueue(t, q, lite.NewJob{Kind: "d"})
	h := stepHoldingARow{q: q, goOn: make(chan struct{}), stepped: make(chan error, 1)}
	h.stepping, h.other = mustLeaseOne(t, q, "default"), mustLeaseOne(t, q, "default")
	holding := make(chan int64, 1)
	go func() {
		hctx := lite.HandlerContext(t.Context(), q, h.stepping.Lease(), func(error) {})
		_, err := lite.RunStepTx(hctx, "hold", func(ctx context.Context, tx *sql.Tx) (int, error) {
			var pid int64
			if err := tx.QueryRowContext(ctx, `select pg_backend_pid() from lite_jobs where id = $1 for share`, h.other.ID).Scan(&pid); err != nil {
				return 0, err
			}
			holding <- pid
			<-h.goOn
			return 1, nil
		})
		if err != nil {
			holding <- 0 // never held: the test fails on stepped
		}
		h.stepped <- err
	}()
	h.pid = <-holding
	return h
}
