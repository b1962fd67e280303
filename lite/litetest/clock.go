package litetest

import (
	"sync"
	"time"
)

// Clock is a fake clock for lite.Options.Now: its time stands still until
// the test moves it, so jobs come due, backoffs pass and heartbeats lapse
// exactly when the test says. It is safe for concurrent use: workers read
// it on their goroutines while the test moves it.
//
// lite reads the time from Options.Now alone, so a Clock decides what is
// due, lapsed or expired. How often a running Worker beats, reclaims and
// polls, handler timeouts and the shutdown grace are still real-time
// durations: drive those by calling Worker.Heartbeat and Worker.Reclaim,
// or use Work and Drain, which wait for nothing.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start until it is moved. A fixed
// start (time.Date, not time.Now) makes every run of a test the same.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time. Pass the method itself as lite.Options.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d; a negative d moves it back.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Set moves the clock to t, forward or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
