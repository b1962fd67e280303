package lite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
)

// The mutation check (.ci/mutation) relaxes a guard by changing lite's
// source and compiling the tests again, several seconds a mutant. Most
// guards are a statement's text, and a mutant that changes a string
// literal alone (one written once in the package) behaves exactly as a
// binary that rewrites that text on its way to the database: the check
// then runs this one binary with LITE_MUTATION_SQL naming a file of
// [old, new] pairs, and MutateStatements makes every connection the
// tests open, on both engines, rewrite what it is sent. The check counts
// a verdict only where the rewrite happened (the file named by
// LITE_MUTATION_SQL with ".applied" appended exists afterwards) and the
// killing test passes with no pairs, and compiles the mutant otherwise.

// MutateStatements points lite at rewriting drivers when LITE_MUTATION_SQL
// is set; engines_test.go's init calls it, after lite/pg has registered
// its server.
func MutateStatements() {
	path := os.Getenv("LITE_MUTATION_SQL")
	if path == "" {
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		panic(fmt.Sprintf("%s: %v", path, err))
	}
	r := &rewriter{pairs: pairs, applied: path + ".applied"}

	db, err := sql.Open(sqliteDriver, ":memory:")
	if err != nil {
		panic(err)
	}
	sql.Register("sqlite-mutated", rewritingDriver{db.Driver(), r})
	db.Close()
	sqliteDriver = "sqlite-mutated"

	servers.Lock()
	defer servers.Unlock()
	for scheme, s := range servers.m {
		servers.m[scheme] = rewritingServer{s, r}
	}
}

// rewriter applies the pairs to a statement's text, and notes the first
// time one matched.
type rewriter struct {
	pairs   [][2]string
	applied string
	once    sync.Once
}

func (r *rewriter) rewrite(query string) string {
	for _, p := range r.pairs {
		if strings.Contains(query, p[0]) {
			query = strings.ReplaceAll(query, p[0], p[1])
			r.once.Do(func() {
				if err := os.WriteFile(r.applied, nil, 0o644); err != nil {
					panic(err)
				}
			})
		}
	}
	return query
}

// rewritingServer opens the server's pool again through a rewriting
// connector, with the pool's settings lite/pg gives it.
type rewritingServer struct {
	Server
	r *rewriter
}

func (s rewritingServer) Open(ctx context.Context, url string) (*sql.DB, error) {
	inner, err := s.Server.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	defer inner.Close()
	dc, ok := inner.Driver().(driver.DriverContext)
	if !ok {
		return nil, fmt.Errorf("mutation check: %T has no connector", inner.Driver())
	}
	c, err := dc.OpenConnector(url)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(rewritingConnector{c, s.r})
	db.SetMaxIdleConns(16) // as lite/pg keeps
	return db, db.PingContext(ctx)
}

type rewritingConnector struct {
	driver.Connector
	r *rewriter
}

func (c rewritingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rewritingConn{conn, c.r}, nil
}

func (c rewritingConnector) Driver() driver.Driver { return rewritingDriver{c.Connector.Driver(), c.r} }

type rewritingDriver struct {
	driver.Driver
	r *rewriter
}

func (d rewritingDriver) Open(name string) (driver.Conn, error) {
	conn, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return rewritingConn{conn, d.r}, nil
}

// rewritingConn passes every call on to the driver's connection, the
// text of each statement rewritten; what the connection does not do, it
// declines as database/sql expects (driver.ErrSkip), so that database/sql
// falls back as it would for the connection itself.
type rewritingConn struct {
	driver.Conn
	r *rewriter
}

func (c rewritingConn) Prepare(query string) (driver.Stmt, error) {
	return c.Conn.Prepare(c.r.rewrite(query))
}

func (c rewritingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, c.r.rewrite(query))
	}
	return c.Conn.Prepare(c.r.rewrite(query))
}

func (c rewritingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, c.r.rewrite(query), args)
	}
	return nil, driver.ErrSkip
}

func (c rewritingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, c.r.rewrite(query), args)
	}
	return nil, driver.ErrSkip
}

func (c rewritingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, fmt.Errorf("mutation check: %T has no BeginTx", c.Conn) // both engines' drivers have
}

func (c rewritingConn) Ping(ctx context.Context) error {
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c rewritingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c rewritingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c rewritingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
