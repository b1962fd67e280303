package main

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// cliEngine is one engine the binary's end-to-end tests run on.
type cliEngine struct {
	name string
	// db makes a fresh, empty database for one test and returns what
	// --db takes to reach it: a file path, or a server URL.
	db func(t *testing.T) string
}

// postgresURL is the server the tests may use; .ci/run starts one.
var postgresURL = os.Getenv("LITE_TEST_POSTGRES")

// forEachEngine runs fn once per engine, as a subtest named after it:
// SQLite always, PostgreSQL when LITE_TEST_POSTGRES names a server. In CI
// a missing server is a failure, not a skip.
func forEachEngine(t *testing.T, fn func(t *testing.T, e cliEngine)) {
	t.Helper()
	for _, e := range []cliEngine{sqliteCLI, postgresCLI} {
		t.Run(e.name, func(t *testing.T) {
			if e.name == "postgres" && postgresURL == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
				}
				t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped")
			}
			fn(t, e)
		})
	}
}

var sqliteCLI = cliEngine{name: "sqlite", db: func(t *testing.T) string {
	return filepath.Join(t.TempDir(), "q.db")
}}

var postgresCLI = cliEngine{name: "postgres", db: func(t *testing.T) string {
	t.Helper()
	return schemaURL(t, postgresURL)
}}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
	schemas   atomic.Int64
)

// schemaURL makes an empty schema on the server at base for one test and
// returns a URL whose connections use it; it is dropped when the test
// ends.
func schemaURL(t *testing.T, base string) string {
	t.Helper()
	var admin *sql.DB
	if base == postgresURL {
		adminOnce.Do(func() { adminDB, adminErr = sql.Open("pgx", postgresURL) })
		if adminErr != nil {
			t.Fatal(adminErr)
		}
		admin = adminDB
	} else {
		db, err := sql.Open("pgx", base)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		admin = db
	}
	name := fmt.Sprintf("lite_cli_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := admin.ExecContext(t.Context(), "create schema "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { admin.Exec("drop schema " + name + " cascade") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

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
