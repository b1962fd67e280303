package lite_test

import (
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAServerQueueKeepsTheServersTimeWhateverTheHostsClockSays(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		if e.name != "postgres" {
			t.Skip("a file's processes share one host's clock")
		}
		is := is.New(t)
		// This host's clock is ten minutes slow (and read without Go's
		// monotonic reading, so that only its wall time counts).
		restore := lite.SetHostClock(func() time.Time { return time.Now().Add(-10 * time.Minute).Round(0) })
		defer restore()
		q, _ := e.open(t, lite.Options{}) // no Options.Now: the server's clock
		mustEnqueue(t, q, lite.NewJob{})
		j := mustLeaseOne(t, q, lite.DefaultQueue)
		var server int64
		is.NoErr(q.DB().QueryRowContext(t.Context(), `select (extract(epoch from clock_timestamp()) * 1000)::bigint`).Scan(&server))
		off := time.UnixMilli(server).Sub(j.HeartbeatAt)
		is.True(off > -time.Second && off < time.Second) // the lease is stamped with the server's time
	})
}

// A reading of the server's clock is off by up to half its round trip.
// Over a slow round trip (a server or a network busy for a moment) that
// is hundreds of milliseconds, and a host that took it would stamp its
// jobs that far off, backwards too, against its own reading of a moment
// before and against every other host.
func TestASlowReadingOfTheServersClockNeverReplacesACloserOne(t *testing.T) {
	forEachEngineInTurn(t, func(t *testing.T, e testEngine) {
		if e.name != "postgres" {
			t.Skip("a file's processes read this host's clock")
		}
		q, _ := e.open(t, lite.Options{})
		// This host's clock moves only as the test says: by step after
		// each reading, step being a round trip's length while a read of
		// the server's clock is timed.
		host := newFakeClock()
		var step time.Duration
		restore := lite.SetHostClock(func() time.Time { t := host.Now(); host.Advance(step); return t })
		defer restore()
		read := func(t *testing.T, roundTrip time.Duration) lite.ServerClock {
			t.Helper()
			step = roundTrip
			defer func() { step = 0 }()
			c, err := lite.NewServerClock(t.Context(), q.DB())
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		sync := func(t *testing.T, c lite.ServerClock, roundTrip time.Duration) {
			t.Helper()
			step = roundTrip
			defer func() { step = 0 }()
			if err := c.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		serverNow := func(t *testing.T) time.Time {
			t.Helper()
			var ms int64
			if err := q.DB().QueryRowContext(t.Context(), `select (extract(epoch from clock_timestamp()) * 1000)::bigint`).Scan(&ms); err != nil {
				t.Fatal(err)
			}
			return time.UnixMilli(ms)
		}
		const slow = 1200 * time.Millisecond
		t.Run("a reading over a slow round trip leaves a closer one be", func(t *testing.T) {
			is := is.New(t)
			c := read(t, 0)
			before, start := c.Now(), host.Now()
			sync(t, c, slow)
			// why: the first reading, carried forward by the host's clock,
			// still says the time; the slow one is off by half its trip
			is.Equal(c.Now().Sub(before), host.Now().Sub(start))
		})
		t.Run("a reading that disagrees with the one held is taken", func(t *testing.T) {
			is := is.New(t)
			c := read(t, 0)
			host.Advance(-time.Minute) // a pause the host's monotonic clock did not count
			sync(t, c, slow)
			off := serverNow(t).Sub(c.Now())
			is.True(off.Abs() < 5*time.Second) // the server's time again, not a minute off
		})
		t.Run("a closer reading replaces the one held", func(t *testing.T) {
			is := is.New(t)
			c := read(t, slow)
			sync(t, c, 0)
			off := serverNow(t).Sub(c.Now())
			is.True(off > -100*time.Millisecond && off < 100*time.Millisecond) // the close reading's time
		})
	})
}
