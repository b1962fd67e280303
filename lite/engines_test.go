package lite_test

import (
	"database/sql"
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
	if onlyEngine == "" || onlyEngine == "sqlite" {
		t.Run("sqlite", func(t *testing.T) { fn(t, sqliteEngine) })
	}
	if onlyEngine == "" || onlyEngine == "postgres" {
		t.Run("postgres", func(t *testing.T) { fn(t, onPostgres(t)) })
	}
}

// onlyEngine, when LITE_TEST_ENGINE names one, runs the conformance tests
// on that engine alone: the mutation check mutates one dialect at a time,
// and need not wait for the other's tests.
var onlyEngine = os.Getenv("LITE_TEST_ENGINE")

// onPostgres is the PostgreSQL engine, for a test of what only a server
// does. Without a server it skips the test, and in CI it fails it.
func onPostgres(t *testing.T) testEngine {
	t.Helper()
	if postgresURL == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
		}
		t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped")
	}
	return postgresEngine
}

var sqliteEngine = testEngine{name: "sqlite", open: func(tb testing.TB, opts lite.Options) (*lite.Queue, string) {
	path := filepath.Join(tb.TempDir(), "lite.db")
	return mustOpenOpts(tb, path, opts), path
}}

var postgresEngine = testEngine{name: "postgres", open: func(tb testing.TB, opts lite.Options) (*lite.Queue, string) {
	tb.Helper()
	dsn := freshSchema(tb)
	if opts.Synchronous == lite.SyncNormal {
		// The server's nearest to SQLite's NORMAL, which tests about
		// exclusion rather than durability ask for: a commit returns
		// before its WAL is on disk, and is lost only if the server's
		// machine fails.
		dsn += "&synchronous_commit=off"
	}
	return mustOpenOpts(tb, dsn, opts), dsn
}}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
	schemas   atomic.Int64 // numbers the schemas this process makes
)

// freshSchema gives one test an empty schema on the test server (see
// schemaPool) and returns a URL whose connections use it, so tests never
// see each other's jobs.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	adminOnce.Do(func() { adminDB, adminErr = sql.Open("pgx", postgresURL) })
	if adminErr != nil {
		tb.Fatal(adminErr)
	}
	name, err := takeSchema(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	// Registered before the queue's own cleanup, so it runs after the
	// queue closed.
	tb.Cleanup(func() { giveSchema(name) })
	return schemaURL(name)
}

// schemaURL is a URL on the test server whose connections use schema name.
func schemaURL(name string) string {
	u, err := url.Parse(postgresURL)
	if err != nil {
		panic(err) // unreachable: takeSchema connected with it
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
