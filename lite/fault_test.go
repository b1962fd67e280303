package lite_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// faults fails the Nth statement or commit on the connections it wraps,
// as SQLite's anomaly tests fail the Nth I/O: once armed, call n fails
// and nothing of it reaches the database.
type faults struct {
	mu        sync.Mutex
	n, seen   int
	triggered bool
}

var errInjected = errors.New("injected fault")

func (f *faults) arm(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n, f.seen, f.triggered = n, 0, false
}

// disarm stops further faults and keeps whether one fired.
func (f *faults) disarm() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = 0
}

func (f *faults) hit(what string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		return nil
	}
	if f.seen++; f.seen == f.n {
		f.triggered = true
		return fmt.Errorf("%s #%d: %w", what, f.n, errInjected)
	}
	return nil
}

func (f *faults) fired() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.triggered
}

type faultConnector struct {
	dsn string
	drv driver.Driver
	f   *faults
}

func (c faultConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &faultConn{Conn: conn, f: c.f}, nil
}

func (c faultConnector) Driver() driver.Driver { return c.drv }

type faultConn struct {
	driver.Conn
	f *faults
}

func (c *faultConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return faultTx{tx, c.f}, nil
}

func (c *faultConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return faultStmt{s, c.f}, nil
}

func (c *faultConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.f.hit("exec"); err != nil {
		return nil, err
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *faultConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.f.hit("query"); err != nil {
		return nil, err
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

type faultTx struct {
	driver.Tx
	f *faults
}

func (t faultTx) Commit() error {
	if err := t.f.hit("commit"); err != nil {
		t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

type faultStmt struct {
	driver.Stmt
	f *faults
}

func (s faultStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.f.hit("exec"); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s faultStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.f.hit("query"); err != nil {
		return nil, err
	}
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// openFaulty makes a queue whose one connection fails on command.
func openFaulty(t *testing.T) (*lite.Queue, *faults) {
	t.Helper()
	probe, err := sql.Open("sqlite", "")
	if err != nil {
		t.Fatal(err)
	}
	drv := probe.Driver()
	probe.Close()
	f := &faults{}
	path := filepath.Join(t.TempDir(), "faulty.db")
	db := sql.OpenDB(faultConnector{
		dsn: "file:" + path + "?_txlock=immediate&_busy_timeout=5000&_pragma=journal_mode(WAL)",
		drv: drv, f: f,
	})
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	q, err := lite.New(t.Context(), db, lite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return q, f
}

// consistent checks what must hold after any fault: the file is sound,
// every acknowledged job is there, and each job's state is coherent.
func consistent(t *testing.T, q *lite.Queue, acknowledged map[int64]bool) {
	t.Helper()
	var integrity string
	if err := q.DB().QueryRowContext(t.Context(), `pragma integrity_check`).Scan(&integrity); err != nil || integrity != "ok" {
		t.Fatalf("integrity: %q %v", integrity, err)
	}
	jobs, err := q.List(t.Context(), lite.ListFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	present := map[int64]bool{}
	for _, j := range jobs {
		present[j.ID] = true
		if j.State == lite.StateRunning && (j.LeaseToken == "" || j.HeartbeatAt.IsZero()) {
			t.Fatalf("job %d is running without a lease", j.ID)
		}
		if j.Generation < int64(j.Attempts) {
			t.Fatalf("job %d: generation %d below attempts %d", j.ID, j.Generation, j.Attempts)
		}
	}
	for id := range acknowledged {
		if !present[id] {
			t.Fatalf("acknowledged job %d is missing", id)
		}
	}
}

func TestFaultInjection(t *testing.T) {
	ops := []struct {
		name string
		// run does the operation once, with the faults armed until it
		// disarms them for its own cleanup.
		run func(t *testing.T, q *lite.Queue, f *faults, acked map[int64]bool) error
	}{
		{"enqueue", func(t *testing.T, q *lite.Queue, f *faults, acked map[int64]bool) error {
			id, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "q"})
			if err == nil {
				acked[id] = true
			}
			return err
		}},
		{"enqueue batch", func(t *testing.T, q *lite.Queue, f *faults, acked map[int64]bool) error {
			got, err := q.EnqueueBatch(t.Context(), []lite.NewJob{{Queue: "q"}, {Queue: "q"}, {Queue: "q"}})
			if err != nil {
				return err
			}
			for _, e := range got {
				acked[e.ID] = true
			}
			return nil
		}},
		{"lease and ack done", func(t *testing.T, q *lite.Queue, f *faults, acked map[int64]bool) error {
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 2})
			if err != nil {
				return err
			}
			acks := make([]lite.Done, len(jobs))
			for i, j := range jobs {
				acks[i] = lite.Done{Lease: j.Lease(), Result: []byte("ok")}
			}
			if _, err := q.AckDoneMany(t.Context(), acks); err != nil {
				// The leases stay held; release them so the next round
				// starts clean, as a worker's shutdown would.
				f.disarm()
				for _, a := range acks {
					q.Release(context.WithoutCancel(t.Context()), a.Lease)
				}
				return err
			}
			return nil
		}},
		{"renew and reclaim", func(t *testing.T, q *lite.Queue, f *faults, acked map[int64]bool) error {
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 1})
			if err != nil {
				return err
			}
			leases := make([]lite.Lease, len(jobs))
			for i, j := range jobs {
				leases[i] = j.Lease()
			}
			if _, err := q.Renew(t.Context(), leases); err != nil {
				f.disarm()
				for _, l := range leases {
					q.Release(context.WithoutCancel(t.Context()), l)
				}
				return err
			}
			_, err = q.ReclaimOrphaned(t.Context())
			f.disarm()
			for _, l := range leases {
				q.Release(context.WithoutCancel(t.Context()), l)
			}
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name+" fails cleanly at every step", func(t *testing.T) {
			is := is.New(t)
			q, f := openFaulty(t)
			acked := map[int64]bool{}
			for range 4 {
				id, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "q"})
				is.NoErr(err)
				acked[id] = true
			}
			for n := 1; ; n++ {
				if n > 50 {
					t.Fatal("the operation never completed")
				}
				before := countJobs(t, q)
				f.arm(n)
				err := op.run(t, q, f, acked)
				fired := f.fired()
				f.arm(0)
				if !fired {
					is.NoErr(err) // no fault reached it: it must have worked
					t.Logf("%d faults injected, each failing cleanly, before it completed", n-1)
					break
				}
				is.True(errors.Is(err, errInjected)) // the fault reached the caller, not swallowed
				is.Equal(countJobs(t, q), before)    // a failed operation added nothing, in part or whole
				consistent(t, q, acked)
			}
			consistent(t, q, acked)
		})
	}
}
