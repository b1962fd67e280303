package lite_test

import (
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
)

// fakeClock is the only time the code under test reads: tests move it to
// make heartbeats lapse and jobs come due. A test sleeps only to give a
// misbehaving goroutine the chance to show itself, never to let time pass.
type fakeClock = litetest.Clock

// newFakeClock is a litetest.Clock at a fixed start.
func newFakeClock() *fakeClock { return litetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) }

// mustOpen opens a queue on a fresh file under tb.TempDir with the clock.
func mustOpen(tb testing.TB, clock *fakeClock) (*lite.Queue, string) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "lite.db")
	return mustOpenPath(tb, path, clock), path
}

// mustOpen opens a fresh, empty queue on e with the clock (nil: the
// engine's own) and returns it with the dsn that opens it again.
func (e testEngine) mustOpen(tb testing.TB, clock *fakeClock) (*lite.Queue, string) {
	tb.Helper()
	opts := lite.Options{}
	if clock != nil {
		opts.Now = clock.Now
	}
	return e.open(tb, opts)
}

func mustOpenPath(tb testing.TB, path string, clock *fakeClock) *lite.Queue {
	tb.Helper()
	opts := lite.Options{}
	if clock != nil {
		opts.Now = clock.Now
	}
	return mustOpenOpts(tb, path, opts)
}

func mustOpenOpts(tb testing.TB, path string, opts lite.Options) *lite.Queue {
	tb.Helper()
	q, err := lite.Open(tb.Context(), path, opts)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { q.Close() })
	return q
}

func mustEnqueue(tb testing.TB, q *lite.Queue, j lite.NewJob) int64 {
	tb.Helper()
	id, err := q.Enqueue(tb.Context(), j)
	if err != nil {
		tb.Fatalf("enqueue: %v", err)
	}
	return id
}

// mustLeaseOne leases exactly one job from queue.
func mustLeaseOne(tb testing.TB, q *lite.Queue, queue string) *lite.Job {
	tb.Helper()
	jobs, err := q.Lease(tb.Context(), lite.LeaseRequest{Queues: []string{queue}})
	if err != nil {
		tb.Fatalf("lease: %v", err)
	}
	if len(jobs) != 1 {
		tb.Fatalf("lease: got %d jobs, want 1", len(jobs))
	}
	return jobs[0]
}

func mustGet(tb testing.TB, q *lite.Queue, id int64) *lite.Job {
	tb.Helper()
	j, err := q.Get(tb.Context(), id)
	if err != nil {
		tb.Fatalf("get: %v", err)
	}
	return j
}

// A test's own statements run on both engines. They number their
// parameters ($1, $2, …), the one form PostgreSQL takes, which the SQLite
// driver binds by number too; serialKey stands for the one type that the
// two spell differently.

// serialKey is the type of a test table's first column that numbers its
// rows in the order they were inserted.
func (e testEngine) serialKey() string {
	if e.name == "postgres" {
		return "bigserial primary key"
	}
	return "integer primary key"
}

// appTx begins a transaction of the application's on q's server, and
// returns it with the pid of its session, for a test that holds rows in
// it across a call of lite's (see waitUntilBlockedBy).
func appTx(t *testing.T, q *lite.Queue) (*sql.Tx, int64) {
	t.Helper()
	tx, err := q.DB().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	var pid int64
	if err := tx.QueryRowContext(t.Context(), `select pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return tx, pid
}

// waitUntilBlockedBy waits until a session of the server waits for a lock
// the session pid holds.
func waitUntilBlockedBy(t *testing.T, q *lite.Queue, pid int64) {
	t.Helper()
	for waiting := 0; waiting == 0; time.Sleep(10 * time.Millisecond) {
		if err := q.DB().QueryRowContext(t.Context(), `select count(*) from pg_stat_activity where $1 = any(pg_blocking_pids(pid))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
	}
}
