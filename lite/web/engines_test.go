package web_test

import (
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	_ "github.com/liteq/lite/lite/pg"
)

// forEachEngine runs fn once per engine (litetest.ForEachEngine), with a
// fresh queue on a fake clock that starts at start.
func forEachEngine(t *testing.T, fn func(t *testing.T, q *lite.Queue, clock *litetest.Clock)) {
	litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
		clock := litetest.NewClock(start)
		q, _ := e.Open(t, lite.Options{Now: clock.Now})
		fn(t, q, clock)
	})
}
