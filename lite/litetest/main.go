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

// RunMain runs a package's tests, as a TestMain does, and returns the
// exit code for os.Exit. When PostgresEnv is unset, it first says so in
// one line, so that a skipped engine is not mistaken for a tested one:
//
//	func TestMain(m *testing.M) { os.Exit(litetest.RunMain(m)) }
//
// go test ./... shows a passing package's output only with -v, so the
// line goes to the terminal when there is one, and to the test's output
// otherwise. A cached result replays no line.
func RunMain(m *testing.M) int {
	if os.Getenv(PostgresEnv) == "" {
		notePostgresSkipped()
	}
	return m.Run()
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
