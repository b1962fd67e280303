package litetest

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"testing"
)

// PostgresEnv is the environment variable that names a PostgreSQL server
// for tests that run on both engines; without it they run on SQLite alone.
const PostgresEnv = "LITE_TEST_POSTGRES"

// Main runs the package's tests and returns their exit code; then it
// drops every schema they made on the PostgreSQL server. When PostgresEnv
// is unset, it first says so in one line, so that a skipped engine is not
// mistaken for a tested one (go test ./... shows a passing package's
// output only with -v, so the line goes to the terminal when there is
// one, and to the test's output otherwise; a cached result replays no
// line). Under Main a
// test's schema is recycled for the next test when it ends, not dropped
// and made again, which spares each test the migration's DDL. Call
// it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(litetest.Main(m)) }
//
// Without it every test's schema is dropped when the test ends.
func Main(m *testing.M) int {
	if os.Getenv(PostgresEnv) == "" {
		notePostgresSkipped()
	}
	recycling.Store(true)
	code := m.Run()
	pgServers.Lock()
	defer pgServers.Unlock()
	for _, s := range pgServers.m {
		s.mu.Lock()
		if len(s.made) > 0 {
			s.admin.Exec("drop schema if exists " + strings.Join(s.made, ", ") + " cascade")
		}
		s.mu.Unlock()
	}
	return code
}

// notePostgresSkipped writes the one line, naming the package.
func notePostgresSkipped() {
	pkg := "tests"
	if info, ok := debug.ReadBuildInfo(); ok {
		pkg = strings.TrimSuffix(info.Path, ".test")
	}
	var out io.Writer = os.Stdout
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		out = tty
	}
	fmt.Fprintf(out, "%s: %s is not set: the PostgreSQL engine was skipped\n", pkg, PostgresEnv)
}
