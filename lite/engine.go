package lite

// engine is the database a queue runs on. Every statement lite runs
// exists once per engine, side by side (see stmt), and the rest of the
// code is the same on both.
type engine int

const (
	// engineSQLite is one file, written by one connection per process.
	engineSQLite engine = iota
	// enginePostgres is a server that workers on many hosts share.
	enginePostgres
)

func (e engine) String() string {
	if e == enginePostgres {
		return "postgres"
	}
	return "sqlite"
}

// stmt is one statement in both dialects, written next to each other so
// that a guard can be compared across engines at a glance. Both take the
// same parameters in the same order: SQLite as ? or ?N, PostgreSQL as $N.
type stmt struct {
	sqlite, postgres string
}

// sql is s in the queue's dialect.
func (q *Queue) sql(s stmt) string {
	if q.engine == enginePostgres {
		return s.postgres
	}
	return s.sqlite
}
