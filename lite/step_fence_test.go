package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// A step that another call recorded first is that call's: the writes of
// the call that came second roll back with its record, whichever order
// the two commit in.
func TestARunStepTxThatFindsItsStepRecordedRollsItsWritesBack(t *testing.T) {
	t.Run("two calls of one run at once", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, e testEngine) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			_, err := q.DB().ExecContext(t.Context(), `create table notes (body text)`)
			is.NoErr(err)
			mustEnqueue(t, q, lite.NewJob{Kind: "d"})
			job := mustLeaseOne(t, q, "default")
			ctx := lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {})
			var wg sync.WaitGroup
			got := make([]string, 2)
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					got[i], errs[i] = lite.RunStepTx(ctx, "note", func(ctx context.Context, tx *sql.Tx) (string, error) {
						_, err := tx.ExecContext(ctx, `insert into notes values ('x')`)
						return []string{"first", "second"}[i], err
					})
				})
			}
			wg.Wait()
			is.NoErr(errors.Join(errs...))
			is.Equal(got[0], got[1]) // both get the one record
			is.Equal(countRows(t, q, `select count(*) from notes`), 1)
		})
	})
	t.Run("another call records it while fn runs", func(t *testing.T) {
		e := onPostgres(t) // on SQLite fn holds the file: no other call records meanwhile
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		_, err := q.DB().ExecContext(t.Context(), `create table notes (body text)`)
		is.NoErr(err)
		mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		job := mustLeaseOne(t, q, "default")
		ctx := lite.HandlerContext(t.Context(), q, job.Lease(), func(error) {})
		got, err := lite.RunStepTx(ctx, "note", func(ctx context.Context, tx *sql.Tx) (string, error) {
			if _, err := q.RecordStep(ctx, job.Lease(), "note", []byte(`"recorded first"`)); err != nil {
				return "", err
			}
			_, err := tx.ExecContext(ctx, `insert into notes values ('x')`)
			return "recorded second", err
		})
		is.NoErr(err)
		is.Equal(got, "recorded first")
		is.Equal(countRows(t, q, `select count(*) from notes`), 0)
	})
}

// On PostgreSQL a cancel that comes while a step's commit is under way
// waits for it: it never returns before writes of the lease it ends
// appear.
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

func countRows(t *testing.T, q *lite.Queue, query string) int {
	t.Helper()
	var n int
	if err := q.DB().QueryRowContext(t.Context(), query).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// Two awaits of one checkpoint at once (two commands of one shell run)
// consume one signal: the second's consumption rolls back with its
// record, and the other signal stays for the next await.
func TestTwoAwaitsOfOneCheckpointAtOnceConsumeOneSignal(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		is.NoErr(q.Signal(t.Context(), id, "go", []byte("one")))
		is.NoErr(q.Signal(t.Context(), id, "go", []byte("two")))
		job := mustLeaseOne(t, q, "default")
		var wg sync.WaitGroup
		got := make([]string, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() {
				var p []byte
				p, errs[i] = q.AwaitSignalLease(t.Context(), job.Lease(), "go", 0)
				got[i] = string(p)
			})
		}
		wg.Wait()
		is.NoErr(errors.Join(errs...))
		is.Equal(got[0], got[1])
		is.Equal(countRows(t, q, q.Rebind(`select count(*) from lite_signals where consumed_at is null`)), 1)
	})
}
