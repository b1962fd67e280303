package litetest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

func TestOpen(t *testing.T) {
	t.Run("a fresh file in the test's directory, closed when the test ends", func(t *testing.T) {
		is := is.New(t)
		var q, other *lite.Queue
		var path, otherPath string
		passes(t, runTB(func(tb testing.TB) {
			q, other = litetest.Open(tb), litetest.Open(tb)
			path, otherPath = dbFile(t, q), dbFile(t, other)
			_, err := q.Enqueue(tb.Context(), lite.NewJob{})
			is.NoErr(err)
			n, err := other.Unfinished(tb.Context(), nil)
			is.NoErr(err)
			is.Equal(n, int64(0)) // its own file: nothing of the other test's
		}))
		is.True(path != otherPath)
		is.Equal(filepath.Base(path), "lite.db")
		_, err := q.Enqueue(t.Context(), lite.NewJob{})
		is.True(err != nil) // closed
		_, err = os.Stat(filepath.Dir(path))
		is.True(os.IsNotExist(err)) // and its directory removed, after the close
	})

	t.Run("the options are used as given, and the default clock is the real one", func(t *testing.T) {
		is := is.New(t)
		clock := litetest.NewClock(start)
		faked := litetest.Open(t, lite.Options{Now: clock.Now})
		id, err := faked.Enqueue(t.Context(), lite.NewJob{})
		is.NoErr(err)
		j, err := faked.Get(t.Context(), id)
		is.NoErr(err)
		is.True(j.CreatedAt.Equal(start))

		wall := litetest.Open(t)
		before := time.Now().Truncate(time.Millisecond)
		id, err = wall.Enqueue(t.Context(), lite.NewJob{})
		is.NoErr(err)
		j, err = wall.Get(t.Context(), id)
		is.NoErr(err)
		is.True(!j.CreatedAt.Before(before) && !j.CreatedAt.After(time.Now()))
	})

	t.Run("a queue that cannot open fails the test, saying why", func(t *testing.T) {
		msg := fails(t, runTB(func(tb testing.TB) {
			litetest.Open(tb, lite.Options{BusyTimeout: -time.Second})
			tb.Errorf("went on after a failed Open")
		}), "litetest.Open: open ", "negative BusyTimeout -1s")
		is.New(t).True(!strings.Contains(msg, "went on"))
		fails(t, runTB(func(tb testing.TB) { litetest.Open(tb, lite.Options{}, lite.Options{}) }),
			"litetest.Open: give at most one lite.Options, not 2")
	})
}

// dbFile is the file q's connections have open.
func dbFile(t *testing.T, q *lite.Queue) string {
	t.Helper()
	var path string
	err := q.DB().QueryRowContext(t.Context(), `select file from pragma_database_list where name = 'main'`).Scan(&path)
	if err != nil {
		t.Fatal(err)
	}
	return path
}
