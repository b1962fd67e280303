package litetest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

func TestClock(t *testing.T) {
	t.Run("it stands still until moved", func(t *testing.T) {
		is := is.New(t)
		c := litetest.NewClock(start)
		is.Equal(c.Now(), start)
		is.Equal(c.Now(), start)
		c.Advance(90 * time.Second)
		is.Equal(c.Now(), start.Add(90*time.Second))
		c.Advance(-time.Minute)
		is.Equal(c.Now(), start.Add(30*time.Second))
		c.Set(start.Add(-time.Hour)) // back as well as forward
		is.Equal(c.Now(), start.Add(-time.Hour))
	})

	t.Run("it is safe for concurrent use", func(t *testing.T) {
		c := litetest.NewClock(start)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 100 {
					c.Advance(time.Millisecond)
					_ = c.Now()
				}
			})
		}
		wg.Wait()
		// why: under -race a lost update or an unguarded read shows here
		is.New(t).Equal(c.Now(), start.Add(400*time.Millisecond))
	})
}
