package lite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// clockResync is how often a server queue reads the server's clock again.
// Between reads it counts on this host's monotonic clock, which a step of
// the wall clock (NTP, an admin, a VM resumed) does not move; its drift
// over this long is microseconds.
const clockResync = 10 * time.Second

// hostNow is this host's clock; tests set it off by minutes.
var hostNow = time.Now

// serverClock is the server's clock, read on this host: every host's
// leases, heartbeats and reclaims are judged by one clock, so a host whose
// own clock is minutes off neither loses its healthy jobs nor holds a dead
// lease forever. The reading is the server's time plus half the round
// trip, carried forward by the monotonic time since.
type serverClock struct {
	db *sql.DB

	mu       sync.Mutex
	serverAt time.Time     // the server's time at localAt
	localAt  time.Time     // this host's reading then, with its monotonic part
	spread   time.Duration // how far serverAt may be off: half its round trip
	syncing  bool
}

// maxDrift is how fast this host's monotonic clock may drift from the
// server's, as a fraction (1/2000: 500 ppm, the most NTP tolerates): a
// reading carried forward for a while may be off by its spread plus that
// share of the while.
const maxDrift = 2000

func newServerClock(ctx context.Context, db *sql.DB) (*serverClock, error) {
	c := &serverClock{db: db}
	if err := c.sync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// sync reads the server's clock. A read whose round trip is slow is as
// good as its half: the error is at most half the round trip. So the
// round trip is timed on a connection already held (a wait for one of
// the pool's is no part of it), and a slow reading never replaces a
// closer one (see keep).
func (c *serverClock) sync(ctx context.Context) error {
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("read the server's clock: %w", classify(err))
	}
	defer conn.Close()
	sent := hostNow()
	var micros int64
	err = conn.QueryRowContext(ctx, `select (extract(epoch from clock_timestamp()) * 1000000)::bigint`).Scan(&micros)
	if err != nil {
		return fmt.Errorf("read the server's clock: %w", classify(err))
	}
	back := hostNow()
	half := back.Sub(sent) / 2
	c.keep(time.UnixMicro(micros).Add(half), back, half)
	return nil
}

// keep takes a reading of the server's clock, serverAt at this host's
// localAt, off by spread at most, unless the reading held is closer: its
// spread, grown by the drift since it was taken, is smaller, and the two
// agree within their spreads. A reading over a slow round trip (a server
// or a network busy for a moment) would otherwise move every time this
// host writes by up to half that round trip, backwards as well. Two
// readings that disagree mean the one held is wrong (this host was paused
// and its monotonic clock did not count the pause): the new one is taken.
func (c *serverClock) keep(serverAt, localAt time.Time, spread time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.localAt.IsZero() {
		since := localAt.Sub(c.localAt)
		held := c.spread + since.Abs()/maxDrift
		off := serverAt.Sub(c.serverAt.Add(since))
		if held < spread && off.Abs() <= held+spread {
			return
		}
	}
	c.serverAt, c.localAt, c.spread = serverAt, localAt, spread
}

// now is the server's time as this host reckons it. A reading older than
// clockResync starts a new one in the background; until it lands the old
// one carries on, so now never waits for the network.
func (c *serverClock) now() time.Time {
	c.mu.Lock()
	since := hostNow().Sub(c.localAt)
	t := c.serverAt.Add(since)
	if since > clockResync && !c.syncing {
		c.syncing = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), clockResync)
			defer cancel()
			_ = c.sync(ctx) // a failed read leaves the last one, still close
			c.mu.Lock()
			c.syncing = false
			c.mu.Unlock()
		}()
	}
	c.mu.Unlock()
	return t
}
