package web_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	_ "github.com/liteq/lite/lite/pg"
)

// The engine picker of lite's own tests, cut to what these need: SQLite
// always, PostgreSQL when LITE_TEST_POSTGRES names a server (in CI a
// missing server fails), LITE_TEST_ENGINE to run one of them.

var (
	postgresURL = os.Getenv("LITE_TEST_POSTGRES")
	onlyEngine  = os.Getenv("LITE_TEST_ENGINE")
)

// forEachEngine runs fn once per engine, as a subtest named after it, with
// a fresh queue on a fake clock that starts at start.
func forEachEngine(t *testing.T, fn func(t *testing.T, q *lite.Queue, clock *litetest.Clock)) {
	t.Helper()
	if onlyEngine == "" || onlyEngine == "sqlite" {
		t.Run("sqlite", func(t *testing.T) {
			clock := litetest.NewClock(start)
			fn(t, openQueue(t, filepath.Join(t.TempDir(), "lite.db"), clock.Now), clock)
		})
	}
	if onlyEngine == "" || onlyEngine == "postgres" {
		t.Run("postgres", func(t *testing.T) {
			if postgresURL == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
				}
				t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped")
			}
			clock := litetest.NewClock(start)
			fn(t, openQueue(t, freshSchema(t), clock.Now), clock)
		})
	}
}

func openQueue(t *testing.T, dsn string, now func() time.Time) *lite.Queue {
	t.Helper()
	q, err := lite.Open(t.Context(), dsn, lite.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
	schemas   atomic.Int64
)

// freshSchema makes an empty schema on the test server for one test, and
// returns a URL whose connections use it; it is dropped when the test ends.
func freshSchema(t *testing.T) string {
	t.Helper()
	adminOnce.Do(func() { adminDB, adminErr = sql.Open("pgx", postgresURL) })
	if adminErr != nil {
		t.Fatal(adminErr)
	}
	name := fmt.Sprintf("lite_web_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := adminDB.ExecContext(t.Context(), "create schema "+name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() { adminDB.Exec("drop schema " + name + " cascade") })
	u, err := url.Parse(postgresURL)
	if err != nil {
		t.Fatal(err)
	}
	v := u.Query()
	v.Set("search_path", name)
	u.RawQuery = v.Encode()
	return u.String()
}
