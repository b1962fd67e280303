package lite

import (
	"context"
	"database/sql"
	"sync"
)

// conn is what the queue's SQL runs on: the writer through prepared
// statements, a transaction of lite's, or a caller's transaction.
type conn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtCache keeps one prepared statement per query text. Re-parsing SQL is
// a large share of CPU with this driver, so hot paths must not do it: a
// statement on lite_jobs compiles every trigger on the table with it.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// missed holds the texts a transaction ran unprepared: txConn cannot
	// prepare, since on a file the writer's one connection is the
	// transaction's. withTx prepares them once its transaction has ended,
	// so a statement runs unprepared at most until its first transaction
	// ends, whichever write path first runs it.
	missed map[string]struct{}
}

// maxStatements bounds the cache, in case some path builds its texts
// from its input: past it, a text a transaction missed stays unprepared.
const maxStatements = 1024

func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

// lookupInTx is lookup for a transaction, which notes a miss for
// prepareMissed.
func (c *stmtCache) lookupInTx(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.m[query]
	if s == nil && len(c.m)+len(c.missed) < maxStatements {
		if c.missed == nil {
			c.missed = make(map[string]struct{})
		}
		c.missed[query] = struct{}{}
	}
	return s
}

// prepareMissed prepares the texts transactions ran unprepared. It must
// not run inside a transaction on the writer (see prepare). A text that
// fails to prepare (one that only runs where a transaction made its
// table) is dropped: it runs unprepared, as before.
func (c *stmtCache) prepareMissed(ctx context.Context) {
	c.mu.Lock()
	missed := c.missed
	c.missed = nil
	c.mu.Unlock()
	for query := range missed {
		_, _ = c.prepare(ctx, query)
	}
}

// prepare returns the cached statement for query, preparing it on first
// use. It takes a connection of c.db, so it must not run inside a
// transaction on the single writer: txConn uses lookup only.
func (c *stmtCache) prepare(ctx context.Context, query string) (*sql.Stmt, error) {
	if s := c.lookup(query); s != nil {
		return s, nil
	}
	s, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[query]; ok {
		s.Close()
		return old, nil
	}
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	c.m[query] = s
	return s, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.m {
		s.Close()
	}
	c.m = nil
}

// writer runs statements on the writer outside any transaction. A
// statement that has started runs to its end whatever happens to the
// caller's context: the driver can report a cancel for a statement that
// committed, and then an error would not mean that nothing was written.
// A context that has already ended stops the call before it starts.
type writer struct{ stmts *stmtCache }

// uncancelled is ctx without its cancellation, or ctx's error if it has
// ended already. Without a way to cancel, the driver also skips the
// goroutine it would start to watch for one.
func uncancelled(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if insideAckWrites(ctx) {
		return nil, errWriteInsideAck
	}
	return context.WithoutCancel(ctx), nil
}

func (w writer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, err := uncancelled(ctx)
	if err != nil {
		return nil, err
	}
	s, err := w.stmts.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.ExecContext(ctx, args...)
}

func (w writer) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, err := uncancelled(ctx)
	if err != nil {
		return nil, err
	}
	s, err := w.stmts.prepare(ctx, query)
	if err != nil {
		return nil, err
	}
	return s.QueryContext(ctx, args...)
}

func (w writer) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if _, err := uncancelled(ctx); err != nil {
		// *sql.Row has no constructor for an error: an ended context makes
		// the pool report one through Scan without running anything. The
		// methods that call this refuse a call inside ack writes first,
		// with an error that says why; this only keeps it from hanging.
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		return w.stmts.db.QueryRowContext(ended, query, args...)
	}
	ctx = context.WithoutCancel(ctx)
	s, err := w.stmts.prepare(ctx, query)
	if err != nil {
		// Running the query unprepared reports the same failure through
		// Scan.
		return w.stmts.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}

// txConn runs statements in a transaction, reusing a statement the writer
// already prepared.
type txConn struct {
	tx    *sql.Tx
	stmts *stmtCache
}

func (t txConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if s := t.stmts.lookupInTx(query); s != nil {
		return t.tx.StmtContext(ctx, s).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, query, args...)
}

func (t txConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := t.stmts.lookupInTx(query); s != nil {
		return t.tx.StmtContext(ctx, s).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t txConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if s := t.stmts.lookupInTx(query); s != nil {
		return t.tx.StmtContext(ctx, s).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}

func (q *Queue) writer() writer { return writer{&q.stmts} }
