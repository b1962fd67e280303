package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"

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
