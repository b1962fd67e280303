package lite_test

import (
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	_ "github.com/liteq/lite/lite/pg"
)

// The mutation check's binary rewrites statements on both engines
// (mutated_statements_test.go); lite/pg has registered its server by now.
func init() { lite.MutateStatements() }

// The engines lite's tests run on are litetest's (see ForEachEngine),
// under the names these tests call them by.

// testEngine is a litetest.Engine, with its name as a field.
type testEngine struct {
	litetest.Engine
	name string
}

// forEachEngine is litetest.ForEachEngine, its engines run side by side:
// a test's PostgreSQL half mostly waits for its server, and the SQLite
// half runs meanwhile (the package's tests took a quarter of an hour one
// engine after the other under the race detector). A test that sets a
// knob of the whole process (export_test.go) runs its engines in turn
// (forEachEngineInTurn): its knob would act on the other half's calls.
func forEachEngine(t *testing.T, fn func(t *testing.T, e testEngine)) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
		t.Parallel()
		lite.SideBySide.Add(1)
		defer lite.SideBySide.Add(-1)
		fn(t, testEngine{e, e.Name()})
	})
}

// forEachEngineInTurn is litetest.ForEachEngine, one engine after the
// other, for a test that sets a knob of the whole process.
func forEachEngineInTurn(t *testing.T, fn func(t *testing.T, e testEngine)) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) { fn(t, testEngine{e, e.Name()}) })
}

// sqliteEngine is litetest.SQLite, for a test of what SQLite alone does.
var sqliteEngine = testEngine{litetest.SQLite, "sqlite"}

// onPostgres is litetest.RequirePostgres.
func onPostgres(tb testing.TB) testEngine {
	e := litetest.RequirePostgres(tb)
	return testEngine{e, e.Name()}
}

// open is litetest's Engine.Open.
func (e testEngine) open(tb testing.TB, opts lite.Options) (*lite.Queue, string) {
	return e.Open(tb, opts)
}

// pick is sqlite or postgres, as e is: a test's text in each dialect.
func pick[T any](e testEngine, sqlite, postgres T) T {
	if e.name == "postgres" {
		return postgres
	}
	return sqlite
}
