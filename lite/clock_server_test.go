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
