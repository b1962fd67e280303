package main

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/liteq/lite/lite/litetest"
)

// The engines the binary's end-to-end tests run on are litetest's (see
// ForEachEngine), under the names these tests call them by.

// cliEngine is a litetest.Engine, with its name as a field.
type cliEngine struct {
	litetest.Engine
	name string
}

// postgresURL is the server the tests may use; .ci/run starts one.
var postgresURL = os.Getenv("LITE_TEST_POSTGRES")

// forEachEngine is litetest.ForEachEngine.
func forEachEngine(t *testing.T, fn func(t *testing.T, e cliEngine)) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) { fn(t, cliEngine{e, e.Name()}) })
}

// onPostgres is litetest.RequirePostgres.
func onPostgres(tb testing.TB) cliEngine {
	e := litetest.RequirePostgres(tb)
	return cliEngine{e, e.Name()}
}

var sqliteCLI = cliEngine{litetest.SQLite, "sqlite"}

// db is what --db takes to reach a fresh, empty database for one test:
// a file path, or a server URL (litetest's Engine.DSN).
func (e cliEngine) db(t *testing.T) string { return e.DSN(t) }

// untouched reports whether nothing was made at db: no file, or no lite
// table in the server's schema.
func (e cliEngine) untouched(t *testing.T, db string) bool {
	t.Helper()
	if e.name == "sqlite" {
		_, err := os.Stat(db)
		return errors.Is(err, fs.ErrNotExist)
	}
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var none bool
	if err := conn.QueryRowContext(t.Context(), `select to_regclass('lite_jobs') is null`).Scan(&none); err != nil {
		t.Fatal(err)
	}
	return none
}
