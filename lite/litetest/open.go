package litetest

import (
	"path/filepath"
	"testing"

	"github.com/liteq/lite/lite"
)

// Open opens a queue on a new file in tb.TempDir() and closes it when the
// test ends; an error fails the test at once. Give at most one
// lite.Options: it is used as given. In particular Open installs no fake
// clock, so the queue reads the real time, as in production, unless you
// pass a Clock's Now:
//
//	clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
//	q := litetest.Open(t, lite.Options{Now: clock.Now})
//
// Each call is a file of its own, so tests may run in parallel.
func Open(tb testing.TB, opts ...lite.Options) *lite.Queue {
	tb.Helper()
	var o lite.Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		tb.Fatalf("litetest.Open: give at most one lite.Options, not %d", len(opts))
	}
	q, err := lite.Open(tb.Context(), filepath.Join(tb.TempDir(), "lite.db"), o)
	if err != nil {
		tb.Fatalf("litetest.Open: %v", err)
	}
	tb.Cleanup(func() {
		if err := q.Close(); err != nil {
			tb.Errorf("litetest: closing the queue: %v", err)
		}
	})
	return q
}
