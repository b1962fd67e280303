package lite_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/liteq/lite/lite"
	_ "github.com/liteq/lite/lite/pg"
)

// testEngine is one engine the conformance tests run on.
type testEngine struct {
	name string
	// open makes a fresh, empty queue; dsn opens the same queue again
	// (another process or connection pool on it).
	open func(tb testing.TB, opts lite.Options) (q *lite.Queue, dsn string)
}

// postgresURL is the server the tests may use; .ci/run starts one.
var postgresURL = os.Getenv("LITE_TEST_POSTGRES")

// forEachEngine runs fn once per engine, as a subtest named after it:
// SQLite always, PostgreSQL when LITE_TEST_POSTGRES names a server. In CI
// a missing server is a failure, not a skip.
func forEachEngine(t *testing.T, fn func(t *testing.T, e testEngine)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, sqliteEngine) })
	t.Run("postgres", func(t *testing.T) {
		if postgresURL == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
			}
			t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped")
		}
		fn(t, postgresEngine)
	})
}

var sqliteEngine = testEngine{name: "sqlite", open: func(tb testing.TB, opts lite.Options) (*lite.Queue, string) {
	path := filepath.Join(tb.TempDir(), "lite.db")
	return mustOpenOpts(tb, path, opts), path
}}

var postgresEngine = testEngine{name: "postgres", open: func(tb testing.TB, opts lite.Options) (*lite.Queue, string) {
	tb.Helper()
	dsn := freshSchema(tb)
	return mustOpenOpts(tb, dsn, opts), dsn
}}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
	schemas   atomic.Int64
)

// freshSchema makes an empty schema on the test server for one test and
// returns a URL whose connections use it, so tests never see each other's
// jobs; the schema is dropped when the test ends.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	adminOnce.Do(func() { adminDB, adminErr = sql.Open("pgx", postgresURL) })
	if adminErr != nil {
		tb.Fatal(adminErr)
	}
	name := fmt.Sprintf("lite_test_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := adminDB.ExecContext(tb.Context(), "create schema "+name); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		// Registered before the queue's own cleanup, so it runs after the
		// queue closed.
		adminDB.Exec("drop schema " + name + " cascade")
	})
	u, err := url.Parse(postgresURL)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
