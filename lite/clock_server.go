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
	serverAt time.Time // the server's time at localAt
	localAt  time.Time // this host's reading then, with its monotonic part
	syncing  bool
}

func newServerClock(ctx context.Context, db *sql.DB) (*serverClock, error) {
	c := &serverClock{db: db}
	if err := c.sync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// sync reads the server's clock. A read whose round trip is slow is as
// good as its half: the error is at most half the round trip.
func (c *serverClock) sync(ctx context.Context) error {
	sent := hostNow()
	var micros int64
	err := c.db.QueryRowContext(ctx, `select (extract(epoch from clock_timestamp()) * 1000000)::bigint`).Scan(&micros)
	if err != nil {
		return fmt.Errorf("read the server's clock: %w", classify(err))
	}
	back := hostNow()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.serverAt = time.UnixMicro(micros).Add(back.Sub(sent) / 2)
	c.localAt = back
	return nil
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
