package lite

import "fmt"

// engine is the database a queue runs on. Every statement lite runs
// exists once per engine, side by side (see stmt), and the rest of the
// code is the same on both. Code that differs by engine asks the engine
// (String, sql, onServer), and each of those answers for every engine or
// panics: an engine lite does not know never gets SQLite's behaviour.
type engine int

const (
	// engineSQLite is one file, written by one connection per process.
	engineSQLite engine = iota
	// enginePostgres is a server that workers on many hosts share.
	enginePostgres
)

// pick is sqlite on SQLite and postgres on PostgreSQL; it panics on any
// other engine.
func pick[T any](e engine, sqlite, postgres T) T {
	switch e {
	case engineSQLite:
		return sqlite
	case enginePostgres:
		return postgres
	}
	panic(fmt.Sprintf("lite: unknown engine %d", int(e)))
}

func (e engine) String() string { return pick(e, "sqlite", "postgres") }

// onServer reports whether e is a server that processes on many hosts
// share, rather than a file that one connection per process writes.
func (e engine) onServer() bool { return pick(e, false, true) }

// stmt is one statement in both dialects, written next to each other so
// that a guard can be compared across engines at a glance. Both take the
// same parameters in the same order: SQLite as ? or ?N, PostgreSQL as $N.
type stmt struct {
	sqlite, postgres string
}

// sql is s in the queue's dialect.
func (q *Queue) sql(s stmt) string { return pick(q.engine, s.sqlite, s.postgres) }
