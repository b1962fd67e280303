package litetest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

func TestForEachEngine(t *testing.T) {
	var ran []string
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
		ran = append(ran, e.Name())

		t.Run("Open gives an empty queue of the test's own, and its dsn opens it again", func(t *testing.T) {
			is := is.New(t)
			q, dsn := e.Open(t)
			other, _ := e.Open(t)
			id, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "mine"})
			is.NoErr(err)
			n, err := other.Unfinished(t.Context(), nil)
			is.NoErr(err)
			is.Equal(n, int64(0)) // the other queue sees none of this one's jobs
			reopened, err := lite.Open(t.Context(), dsn, lite.Options{})
			is.NoErr(err)
			defer reopened.Close()
			j, err := reopened.Get(t.Context(), id)
			is.NoErr(err)
			is.Equal(j.Kind, "mine")
		})

		t.Run("DSN is a database nothing has opened yet", func(t *testing.T) {
			is := is.New(t)
			dsn := e.DSN(t)
			is.True(dsn != e.DSN(t)) // each call a database of its own
			if e == litetest.SQLite {
				_, err := os.Stat(dsn)
				is.True(os.IsNotExist(err))
				return
			}
			q, err := lite.Open(t.Context(), dsn, lite.Options{})
			is.NoErr(err)
			defer q.Close()
			n, err := q.Unfinished(t.Context(), nil)
			is.NoErr(err)
			is.Equal(n, int64(0))
		})
	})
	var want []string
	for _, name := range []string{"sqlite", "postgres"} {
		only := os.Getenv("LITE_TEST_ENGINE")
		if (only == "" || only == name) && (name == "sqlite" || os.Getenv("LITE_TEST_POSTGRES") != "") {
			want = append(want, name)
		}
	}
	is.New(t).Equal(ran, want) // SQLite first, then PostgreSQL if there is a server
}

func TestAMissingServer(t *testing.T) {
	// This test binary runs TestForEachEngine again, without a server.
	run := func(t *testing.T, env ...string) (string, error) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run", "^TestForEachEngine$", "-test.v")
		cmd.Env = append(os.Environ(), "LITE_TEST_POSTGRES=", "LITE_TEST_ENGINE=", "CI=")
		cmd.Env = append(cmd.Env, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	t.Run("skips the PostgreSQL engine with one line that says so", func(t *testing.T) {
		is := is.New(t)
		out, err := run(t)
		is.NoErr(err)
		is.True(strings.Contains(out, "--- SKIP: TestForEachEngine/postgres"))
		is.Equal(strings.Count(out, "LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped"), 1)
		is.True(strings.Contains(out, "--- PASS: TestForEachEngine/sqlite"))
	})

	t.Run("fails under CI=true", func(t *testing.T) {
		is := is.New(t)
		out, err := run(t, "CI=true")
		is.True(err != nil) // why: a CI whose server went missing must not pass on SQLite alone
		is.True(strings.Contains(out, "--- FAIL: TestForEachEngine/postgres"))
		is.True(strings.Contains(out, "CI=true but LITE_TEST_POSTGRES is not set"))
	})
}
