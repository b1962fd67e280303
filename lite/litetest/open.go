package litetest

import (
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
// Each call is a file of its own, so tests may run in parallel. To run a
// test on PostgreSQL too, see ForEachEngine.
func Open(tb testing.TB, opts ...lite.Options) *lite.Queue {
	tb.Helper()
	o, ok := oneOptions(tb, "Open", opts)
	if !ok {
		return nil
	}
	return openAt(tb, "Open", freshFile(tb), o)
}
