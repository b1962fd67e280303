package lite

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// WorkerOptions configure a Worker. The zero value of each field is its
// default; a negative value is an error.
type WorkerOptions struct {
	// Queues gives each queue the worker serves slots of its own, so a
	// backlog in one never delays another: each round, the worker leases
	// for every queue with a free slot. Empty means every queue, sharing
	// Concurrency slots, leased highest priority first, then oldest
	// run_at.
	Queues map[string]QueueConfig
	// Concurrency: the slots shared by every queue when Queues is empty;
	// the default Concurrency of each queue in Queues otherwise. Default 8.
	Concurrency int
	// HeartbeatInterval is how often the worker renews its leases, all in
	// one statement. Default 5s.
	HeartbeatInterval time.Duration
	// StaleAfter is how long a job's heartbeat may lapse before any
	// worker reclaims it. It is stored with each lease the worker takes,
	// so every reclaimer, whatever its own settings, honours it. It must
	// be at least three heartbeats, so that one slow renewal never costs a
	// lease. Default six heartbeats.
	StaleAfter time.Duration
	// ReclaimInterval is how often the worker reclaims lapsed jobs of any
	// worker (recoverStale). Default HeartbeatInterval.
	ReclaimInterval time.Duration
	// PollInterval is how often an idle worker checks for commits by
	// other processes (PRAGMA data_version: no write, no query of the
	// table). Jobs enqueued in this process wake it at once. A write to
	// the file's WAL wakes it too, through the OS's file notifications,
	// and where those work it polls only as a safety net, at most once a
	// second. Default 5ms.
	PollInterval time.Duration
	// CleanInterval is about how often the worker deletes finished jobs
	// past the database's Retention and gives their space back (Clean);
	// each run is jittered, and the first comes a few seconds after Run
	// starts, so that workers started together do not clean together.
	// Default DefaultCleanInterval.
	CleanInterval time.Duration
	// NoCleaning turns the worker's cleaning off, for programs that purge
	// or call Clean themselves.
	NoCleaning bool
	// Timeout bounds each handler run; KindTimeouts overrides it per
	// kind. Zero means no timeout.
	Timeout      time.Duration
	KindTimeouts map[string]time.Duration
	// ShutdownGrace is how long running handlers may finish after Run's
	// context ends before they are cancelled and their leases released.
	// Default 10s.
	ShutdownGrace time.Duration
	// Logger receives warnings (lost leases, reclaims, failed writes).
	// Default slog.Default().
	Logger *slog.Logger
	// Identity is written to locked_by. Default the queue's Identity.
	Identity string
	// OnEvent, if set, is called for every event, from the goroutine
	// where it happened. It must not block.
	OnEvent func(Event)
	// StopWhenIdle makes Run return, shutting down as when its context
	// ends, once nothing is startable now (a round of leases with every
	// slot free started nothing) and no job it could lease runs in any
	// process (one may fail and come back, or be reclaimed from a dead
	// worker). A job due later, one waiting out its retry backoff, a
	// paused queue's jobs and jobs a queue's limits hold back do not keep
	// it running.
	StopWhenIdle bool
	// Middleware wraps every handler, the first outermost; KindMiddleware
	// wraps the handler of one kind, inside Middleware. See Middleware.
	Middleware     []Middleware
	KindMiddleware map[string][]Middleware
}

// QueueConfig configures one queue of a Worker.
type QueueConfig struct {
	// Concurrency is how many of the queue's jobs run at once in this
	// worker. Default WorkerOptions.Concurrency.
	Concurrency int
}

// Defaults for WorkerOptions.
const (
	DefaultConcurrency       = 8
	DefaultHeartbeatInterval = 5 * time.Second
	DefaultPollInterval      = 5 * time.Millisecond
	DefaultShutdownGrace     = 10 * time.Second
	DefaultCleanInterval     = time.Minute
)

func (o WorkerOptions) withDefaults(q *Queue) (WorkerOptions, error) {
	if o.Concurrency < 0 || o.HeartbeatInterval < 0 || o.StaleAfter < 0 || o.ReclaimInterval < 0 ||
		o.PollInterval < 0 || o.Timeout < 0 || o.ShutdownGrace < 0 || o.CleanInterval < 0 {
		return o, errors.New("worker options: negative value")
	}
	for kind, d := range o.KindTimeouts {
		if d < 0 {
			return o, fmt.Errorf("worker options: negative timeout %s for kind %q", d, kind)
		}
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	queues, err := o.queueConfigs()
	if err != nil {
		return o, err
	}
	o.Queues = queues
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 6 * o.HeartbeatInterval
	}
	if o.StaleAfter < time.Millisecond {
		// Leases store it in whole milliseconds: less would be none.
		return o, fmt.Errorf("worker options: StaleAfter %s is under a millisecond", o.StaleAfter)
	}
	if o.StaleAfter < 3*o.HeartbeatInterval {
		return o, fmt.Errorf("worker options: StaleAfter %s is under three heartbeats of %s",
			o.StaleAfter, o.HeartbeatInterval)
	}
	if o.ReclaimInterval == 0 {
		o.ReclaimInterval = o.HeartbeatInterval
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.CleanInterval == 0 {
		o.CleanInterval = DefaultCleanInterval
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = DefaultShutdownGrace
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Identity == "" {
		o.Identity = q.opts.Identity
	}
	return o, nil
}

// queueConfigs checks Queues and returns a copy with each default filled
// in, so that a caller's later change to its map changes nothing here.
func (o WorkerOptions) queueConfigs() (map[string]QueueConfig, error) {
	if len(o.Queues) == 0 {
		return nil, nil
	}
	queues := make(map[string]QueueConfig, len(o.Queues))
	for name, c := range o.Queues {
		switch {
		case name == "":
			return nil, errors.New("worker options: an empty queue name in Queues")
		case nameProblem(name) != "":
			return nil, fmt.Errorf("worker options: queue %q %s", name, nameProblem(name))
		case c.Concurrency < 0:
			return nil, fmt.Errorf("worker options: negative Concurrency %d for queue %q", c.Concurrency, name)
		case c.Concurrency == 0:
			c.Concurrency = o.Concurrency
		}
		queues[name] = c
	}
	return queues, nil
}
