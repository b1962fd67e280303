package litetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/liteq/lite/lite"
)

// Engine is a database lite runs on, as a test opens it: SQLite, a file
// in the test's temporary directory, or PostgreSQL, a schema of the test's
// own on the server LITE_TEST_POSTGRES names. ForEachEngine hands one to
// each of its subtests.
type Engine struct{ name string }

// SQLite is the SQLite engine, which every test binary has.
var SQLite = Engine{name: "sqlite"}

// postgres is the PostgreSQL engine: RequirePostgres or ForEachEngine
// hand it out once the test has a server.
var postgres = Engine{name: "postgres"}

// Name is the engine's name, as lite calls it and as the subtests of
// ForEachEngine are named: "sqlite" or "postgres".
func (e Engine) Name() string { return e.name }

// Open opens a fresh, empty queue on e and closes it when the test ends;
// an error fails the test at once. It returns the queue and the dsn that
// opens the same queue again (a file path, or a server URL), for a second
// pool or another process. Give at most one lite.Options, used as given,
// except that on PostgreSQL SyncNormal also sets the server's
// synchronous_commit=off, its nearest to SQLite's NORMAL.
func (e Engine) Open(tb testing.TB, opts ...lite.Options) (*lite.Queue, string) {
	tb.Helper()
	o, ok := oneOptions(tb, "Engine.Open", opts)
	if !ok {
		return nil, ""
	}
	var dsn string
	switch e {
	case SQLite:
		dsn = freshFile(tb)
	case postgres:
		dsn = takeSchema(tb)
		if o.Synchronous == lite.SyncNormal {
			dsn += "&synchronous_commit=off"
		}
	default:
		panic("litetest: an Engine not from ForEachEngine, SQLite or RequirePostgres")
	}
	return openAt(tb, "Engine.Open", dsn, o), dsn
}

// DSN is a fresh database on e that nothing has opened yet: a file path
// that does not exist, or the URL of an empty schema, dropped when the
// test ends. Use it to test what opening does, or to hand --db to a
// program; Open is quicker for a queue.
func (e Engine) DSN(tb testing.TB) string {
	tb.Helper()
	switch e {
	case SQLite:
		return filepath.Join(tb.TempDir(), "lite.db")
	case postgres:
		return newSchema(tb)
	}
	panic("litetest: an Engine not from ForEachEngine, SQLite or RequirePostgres")
}

// ForEachEngine runs fn once per engine, each as a subtest named after it:
// SQLite always, and PostgreSQL when LITE_TEST_POSTGRES holds a server's
// URL (see RequirePostgres). LITE_TEST_ENGINE=sqlite or =postgres runs one
// of them alone.
func ForEachEngine(t *testing.T, fn func(t *testing.T, e Engine)) {
	t.Helper()
	only := os.Getenv("LITE_TEST_ENGINE")
	for _, e := range []Engine{SQLite, postgres} {
		if only != "" && only != e.name {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			if e == postgres {
				RequirePostgres(t)
			}
			fn(t, e)
		})
	}
}

// RequirePostgres returns the PostgreSQL engine, for a test of what only a
// server does. Without LITE_TEST_POSTGRES it skips the test, with one
// line that says so; under CI=true it fails it instead, so that a CI
// whose server went missing does not pass on SQLite alone. The test
// binary needs lite's PostgreSQL support, as the program does:
//
//	import _ "github.com/liteq/lite/lite/pg"
func RequirePostgres(tb testing.TB) Engine {
	tb.Helper()
	if os.Getenv(PostgresEnv) == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal("litetest: CI=true but " + PostgresEnv + " is not set: give the tests a PostgreSQL server's URL")
		}
		tb.Skip(PostgresEnv + " is not set: the PostgreSQL engine was skipped")
	}
	return postgres
}

// openAt opens the queue at dsn for one test of name's.
func openAt(tb testing.TB, name, dsn string, o lite.Options) *lite.Queue {
	tb.Helper()
	q, err := lite.Open(tb.Context(), dsn, o)
	if err != nil {
		tb.Fatalf("litetest.%s: %v", name, err)
		return nil
	}
	tb.Cleanup(func() {
		if err := q.Close(); err != nil {
			tb.Errorf("litetest: closing the queue: %v", err)
		}
	})
	return q
}

// oneOptions is the one lite.Options of a call that takes at most one.
func oneOptions(tb testing.TB, name string, opts []lite.Options) (lite.Options, bool) {
	tb.Helper()
	switch len(opts) {
	case 0:
		return lite.Options{}, true
	case 1:
		return opts[0], true
	}
	tb.Fatalf("litetest.%s: give at most one lite.Options, not %d", name, len(opts))
	return lite.Options{}, false
}
