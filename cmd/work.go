package cmd

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/cmd/proc"
	"github.com/liteq/lite/lite"
)

// permanentExitCode is the exit code with which a job's command says that
// retrying cannot help: the job goes straight to dead.
const permanentExitCode = 100

// stderrTail is how much of a failed command's stderr becomes its error.
const stderrTail = 2048

// drainWait is how long lite waits for a finished command's pipes to
// close after its tree was killed; then it takes what they hold and lets
// go. Only a process that moved out of the tree (setsid) can keep the
// pipes open that long.
const drainWait = time.Second

// shutdownSlack is how much longer than both graces (to finish, then from
// SIGTERM to SIGKILL) the worker waits at shutdown before it gives up on a
// handler. Each handler stops its command on that schedule by itself; the
// worker's own grace is a backstop that must not cut it short.
const shutdownSlack = 5 * time.Second

// workCmd runs a command once per job.
type workCmd struct {
	workerFlags
	ExitWhenEmpty bool     `help:"Exit once nothing is startable now and no job of its queues runs anywhere (a job due later, one waiting out its retry backoff, a paused queue's jobs and jobs held back by limits do not count). Exit status: 0 when no job it ran died, 3 when some did, 1 on an error, 2 on a usage error."`
	Command       []string `arg:"" passthrough:"" help:"The command, after --. The payload is its stdin; exit 0 is done with stdout as the result (up to --max-result); exit 100 fails for good; any other exit fails the attempt."`
}

// workerFlags configure the worker that runs a command once per job: lite
// work's, and lite serve's when it is given a command.
type workerFlags struct {
	Queue       []string      `short:"q" predictor:"queue" sep:"none" placeholder:"NAME[=N]" help:"Queue to work, with N slots of its own (default -c), so a backlog in one queue never delays another; repeat for more (default: every queue, sharing -c slots)."`
	Kind        []string      `short:"k" sep:"none" placeholder:"KIND" help:"Lease only jobs of this kind; repeat for more (default: every kind)."`
	Concurrency int           `short:"c" default:"4" help:"Jobs run at once: in all, or in each --queue given without =N."`
	Heartbeat   time.Duration `default:"5s" help:"How often leases are renewed."`
	StaleAfter  time.Duration `default:"30s" help:"How long a heartbeat may lapse before a job is reclaimed (at least three heartbeats)."`
	Timeout     time.Duration `help:"Stop a job's command after this long and fail the attempt (default: no limit)."`
	Poll        time.Duration `default:"5ms" help:"How often to look for jobs enqueued by other processes."`
	Grace       time.Duration `default:"10s" help:"At shutdown, how long running commands may finish; after SIGTERM, how long before SIGKILL. A second request to stop (another signal, or the same one a second or more after the first) kills them at once."`
	MaxResult   string        `default:"1MiB" placeholder:"SIZE" help:"The most of a command's stdout kept as its job's result (B, KiB, MiB; default 1MiB, at most 64MiB). More is cut to this size, marked with the real size; the job is still done."`
	replicateFlags

	queues    map[string]lite.QueueConfig // --queue, parsed by validate
	maxResult int                         // --max-result, parsed by validate
}

// argv is the command to run: kong's passthrough keeps the -- itself.
func argv(command []string) []string {
	if len(command) > 0 && command[0] == "--" {
		return command[1:]
	}
	return command
}

// Validate runs before the queue's file is opened. It refuses what would
// not run as asked: a zero or negative value the worker would replace
// with its default or reject without naming the flag, and a command that
// cannot start, which would burn every attempt of every job.
func (c *workCmd) Validate(kctx *kong.Context) error {
	if err := asGiven(kctx, &c.Command); err != nil {
		return err
	}
	if !slices.Contains(kctx.Args, "--") || len(argv(c.Command)) == 0 {
		return errors.New("give the command after --, as in: lite work -- ./handler.sh")
	}
	return c.validate(argv(c.Command))
}

// validate checks the flags and the command, and parses --queue.
func (c *workerFlags) validate(argv []string) error {
	switch {
	case c.Concurrency < 1:
		return fmt.Errorf("--concurrency must be at least 1, not %d", c.Concurrency)
	case c.Grace <= 0:
		return fmt.Errorf("--grace must be more than 0s, not %s: commands get it to finish at shutdown, and again from SIGTERM to SIGKILL", c.Grace)
	case c.Heartbeat <= 0:
		return fmt.Errorf("--heartbeat must be more than 0s, not %s", c.Heartbeat)
	case c.StaleAfter <= 0:
		return fmt.Errorf("--stale-after must be more than 0s, not %s", c.StaleAfter)
	case c.Poll <= 0:
		return fmt.Errorf("--poll must be more than 0s, not %s", c.Poll)
	case c.Timeout < 0:
		return fmt.Errorf("--timeout must not be negative, not %s (0 means no limit)", c.Timeout)
	case c.StaleAfter < time.Millisecond:
		return fmt.Errorf("--stale-after must be at least 1ms, not %s: leases store it in milliseconds", c.StaleAfter)
	case c.StaleAfter < 3*c.Heartbeat:
		return fmt.Errorf("--stale-after %s is under three heartbeats of --heartbeat %s: one slow renewal would cost a lease", c.StaleAfter, c.Heartbeat)
	}
	if err := c.check(); err != nil {
		return err
	}
	queues, err := parseQueues(c.Queue)
	if err != nil {
		return err
	}
	c.queues = queues
	if err := checkKinds(c.Kind); err != nil {
		return err
	}
	if c.maxResult, err = parseSize(c.MaxResult); err != nil {
		return fmt.Errorf("--max-result %q: %w", c.MaxResult, err)
	}
	if c.maxResult < minMaxResult || c.maxResult > maxMaxResult {
		return fmt.Errorf("--max-result %s: give 1KiB to 64MiB", c.MaxResult)
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		// exec's message names the command twice; say it once.
		var execErr *exec.Error
		if errors.As(err, &execErr) {
			err = execErr.Err
		}
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return fmt.Errorf("cannot run %q: %w", argv[0], err)
	}
	return nil
}

// parseQueues reads each --queue NAME[=N] into the queue's config; N, when
// given, is cut at the last "=", so a queue whose name holds one is given
// as NAME=N.
func parseQueues(flags []string) (map[string]lite.QueueConfig, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	queues := make(map[string]lite.QueueConfig, len(flags))
	for _, flag := range flags {
		name, n, hasN := flag, "", false
		if i := strings.LastIndexByte(flag, '='); i >= 0 {
			name, n, hasN = flag[:i], flag[i+1:], true
		}
		var cfg lite.QueueConfig
		switch {
		case name == "":
			return nil, fmt.Errorf("--queue %q names no queue: give NAME or NAME=N", flag)
		case lite.CheckName(name) != nil:
			return nil, fmt.Errorf("--queue %w", lite.CheckName(name))
		case hasN:
			v, err := strconv.Atoi(n)
			if err != nil {
				return nil, fmt.Errorf("--queue %q: N must be a whole number of jobs run at once, not %q", flag, n)
			}
			if v < 1 {
				return nil, fmt.Errorf("--queue %q: N must be at least 1, not %d", flag, v)
			}
			cfg.Concurrency = v
		}
		if _, dup := queues[name]; dup {
			return nil, fmt.Errorf("--queue %q is given twice", name)
		}
		queues[name] = cfg
	}
	return queues, nil
}

// checkKinds refuses a --kind that no job can have, or that the worker
// would take for every kind, and one given twice.
func checkKinds(kinds []string) error {
	for i, kind := range kinds {
		switch {
		case kind == "":
			return errors.New("--kind is empty: give a kind, or leave --kind out to work every kind")
		case kind == lite.AnyKind:
			return fmt.Errorf("--kind %q: leave --kind out to work every kind", kind)
		case slices.Contains(kinds[:i], kind):
			return fmt.Errorf("--kind %q is given twice", kind)
		}
		if err := lite.CheckName(kind); err != nil {
			return fmt.Errorf("--kind %w", err)
		}
	}
	return nil
}

// Run works until SIGINT, SIGTERM or SIGHUP (then shuts down gracefully;
// a second request, another signal or the same one a second or more
// after the first, stops it at once), or with --exit-when-empty until nothing is
// startable now.
func (c *workCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	return c.work(ctx, env, g, q, argv(c.Command), c.ExitWhenEmpty, nil)
}

// work runs argv once per job until ctx ends, or with exitWhenEmpty until
// nothing is startable now; onEvent, if set, sees every worker event.
func (c *workerFlags) work(ctx context.Context, env Env, g *globals, q *lite.Queue, argv []string, exitWhenEmpty bool, onEvent func(lite.Event)) error {
	log := slog.New(slog.NewTextHandler(quietWriter{env.Stderr}, &slog.HandlerOptions{Level: g.LogLevel}))
	var died atomic.Int64
	w, err := lite.NewWorker(q, lite.WorkerOptions{
		Queues:            c.queues,
		Concurrency:       c.Concurrency,
		HeartbeatInterval: c.Heartbeat,
		StaleAfter:        c.StaleAfter,
		PollInterval:      c.Poll,
		Timeout:           c.Timeout,
		ShutdownGrace:     2*c.Grace + shutdownSlack,
		Logger:            log,
		OnEvent: func(ev lite.Event) {
			logEvent(log, ev)
			if ev.Kind == lite.EventFailed && ev.State == lite.StateDead {
				died.Add(1)
			}
			if onEvent != nil {
				onEvent(ev)
			}
		},
		StopWhenIdle: exitWhenEmpty,
	})
	if err != nil {
		return usageError{fmt.Errorf("work: %w", err)}
	}
	stopLog := context.AfterFunc(ctx, func() {
		log.Info("lite: shutting down: running commands may finish within the grace; a second request (another signal, or the same one a second later) stops them at once",
			"grace", c.Grace)
	})
	defer stopLog()
	now := stopNow(ctx)
	h := c.handler(argv, log, g.DB, ctx.Done(), now)
	if len(c.Kind) == 0 {
		w.Handle(lite.AnyKind, h)
	}
	for _, kind := range c.Kind {
		w.Handle(kind, h) // the worker then leases these kinds alone
	}
	// Said once replication (--replicate) has started: a replica it
	// cannot write to is refused in one line, alone.
	err = c.run(g, log, func() error {
		c.logStart(log, g.DB)
		return w.Run(ctx)
	})
	if err != nil {
		return err
	}
	select {
	case <-now:
		return errors.New("work: stopped at once on a second signal: running commands were killed; a job whose give-back failed (see the log) is reclaimed once its stale-after lapses")
	default:
	}
	if !exitWhenEmpty {
		return nil
	}
	if ctx.Err() == nil {
		cleanBeforeExit(ctx, q, log)
	}
	if n := died.Load(); n > 0 {
		return exitError{fmt.Errorf("work: %d jobs died during this run (lite ls -s dead lists them)", n), ExitDead}
	}
	return nil
}

// logStart says what the worker works: a typo in --db or --queue shows
// at once rather than as a worker that waits on nothing.
func (c *workerFlags) logStart(log *slog.Logger, db string) {
	queues, slots := "every queue", c.Concurrency
	if len(c.queues) > 0 {
		var each []string
		slots = 0
		for _, name := range slices.Sorted(maps.Keys(c.queues)) {
			n := cmp.Or(c.queues[name].Concurrency, c.Concurrency)
			each, slots = append(each, fmt.Sprintf("%s=%d", safe(name), n)), slots+n
		}
		queues = strings.Join(each, ",")
	}
	kinds := "every kind"
	if len(c.Kind) > 0 {
		kinds = safe(strings.Join(c.Kind, ","))
	}
	log.Info("lite: working", "db", lite.Redact(db), "queues", queues, "slots", slots, "kinds", kinds)
}

// logEvent logs each job's start and end at debug level.
func logEvent(log *slog.Logger, ev lite.Event) {
	if !log.Enabled(context.Background(), slog.LevelDebug) || ev.Job == nil {
		return
	}
	args := []any{"id", ev.JobID, "generation", ev.Generation, "queue", safe(ev.Job.Queue), "kind", safe(ev.Job.Kind), "state", ev.State}
	if ev.Why != "" {
		args = append(args, "why", ev.Why)
	}
	log.Debug("lite: job "+string(ev.Kind), args...)
}

type stopNowKey struct{}

// WithStopNow returns ctx carrying now. lite work shuts down gracefully
// when ctx ends, and at once when now ends: its commands' trees get
// SIGKILL, their jobs are given back, and it returns an error. main ends
// now on a second signal.
func WithStopNow(ctx, now context.Context) context.Context {
	return context.WithValue(ctx, stopNowKey{}, now)
}

// stopNow is closed when the context WithStopNow put in ctx ends; nil
// without one.
func stopNow(ctx context.Context) <-chan struct{} {
	if now, ok := ctx.Value(stopNowKey{}).(context.Context); ok {
		return now.Done()
	}
	return nil
}

// cleanBeforeExit deletes the finished jobs past the file's retention
// once. A worker that exits when its queues are empty (run from cron, say)
// would otherwise exit before its periodic clean comes round, and a file
// worked only that way would keep every job forever. A failure costs only
// the space, until the next run: it is logged, and the exit stays 0. A
// signal stops it between batches.
func cleanBeforeExit(ctx context.Context, q *lite.Queue, log *slog.Logger) {
	rep, err := q.Clean(ctx)
	if err != nil && ctx.Err() == nil {
		log.Warn("lite: deleting finished jobs past their retention failed; the next run tries again", "err", err)
	}
	if rep.Deleted > 0 {
		log.Debug("lite: deleted finished jobs past their retention", "deleted", rep.Deleted, "freed_pages", rep.FreedPages)
	}
}

// quietWriter drops write errors. A log line that cannot be written has
// nowhere else to go, and a closed log pipe must not stop a worker: slog
// drops a handler's error today, and this keeps it so whatever writes.
type quietWriter struct{ w io.Writer }

func (q quietWriter) Write(p []byte) (int, error) {
	_, _ = q.w.Write(p)
	return len(p), nil
}

// handler runs the command once for a job, with the payload on its stdin
// and the job in its environment, as a tree that ends with the run. The
// command's exit status decides: 0 is done with stdout as the result, 100
// fails for good, 75 after a park it recorded parks the job, any other
// fails the attempt. A command lite stopped fails
// the attempt (timeout, lost lease), or gives the job back (shutdown).
func (c *workerFlags) handler(argv []string, log *slog.Logger, db string, shutdown, now <-chan struct{}) lite.Handler {
	return func(ctx context.Context, job *lite.Job) error {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(),
			"LITE_JOB_ID="+strconv.FormatInt(job.ID, 10),
			"LITE_JOB_GENERATION="+strconv.FormatInt(job.Generation, 10),
			"LITE_JOB_ATTEMPT="+strconv.Itoa(job.Attempts),
			"LITE_JOB_QUEUE="+job.Queue,
			"LITE_JOB_KIND="+job.Kind,
			"LITE_JOB_KEY="+job.Key,
			"LITE_JOB_TOKEN="+job.LeaseToken,
			"LITE_DB="+db, // for lite progress and lite log
		)
		stdout := &headWriter{max: c.maxResult}
		stderr := &tailWriter{max: stderrTail}
		p, err := proc.AttachPipes(cmd, job.Payload, stdout, stderr)
		if err != nil {
			return err
		}
		t, err := proc.StartTree(cmd)
		p.Started()
		if err != nil {
			p.Finish(0)
			return err
		}
		stopped, err := t.Wait(proc.Stops{Ctx: ctx, Shutdown: shutdown, Now: now, Grace: c.Grace})
		p.Finish(drainWait)
		switch stopped {
		case proc.StoppedByShutdown, proc.StoppedAtOnce:
			// Given back with no attempt spent, now rather than after the
			// worker's longer backstop grace.
			return fmt.Errorf("command stopped: %w", lite.ErrShutdown)
		case proc.StoppedByContext:
			return fmt.Errorf("command stopped: %w", context.Cause(ctx))
		}
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			failure := errors.New(exit.Error())
			if tail := stderr.String(); tail != "" {
				failure = fmt.Errorf("%s: %s", exit, tail)
			}
			switch exit.ExitCode() {
			case permanentExitCode:
				return lite.Permanent(failure)
			case lite.ParkedExitCode:
				return parkedOr(ctx, failure)
			}
			return failure
		}
		if err != nil {
			return err
		}
		if stdout.n > int64(len(stdout.b)) {
			log.Warn("lite: a command's output is over --max-result: its job's result is cut to it, marked",
				"id", job.ID, "bytes", stdout.n, "max_result", c.maxResult)
		}
		lite.SetResult(ctx, stdout.result())
		return nil
	}
}

// parkedOr is the park the run's command recorded (lite sleep, lite
// await-signal) before it exited lite.ParkedExitCode, or failure when it
// recorded none: an exit 75 of its own fails the attempt as any other.
func parkedOr(ctx context.Context, failure error) error {
	p, err := lite.ParkRequested(ctx)
	switch {
	case err != nil:
		return errors.Join(failure, err)
	case p == nil:
		return failure
	}
	return p
}

// The range of --max-result: room for the truncation mark, and a bound
// on what each slot may hold in memory.
const (
	minMaxResult = 1 << 10
	maxMaxResult = 64 << 20
)

// headWriter keeps the first max bytes written to it and counts them all.
type headWriter struct {
	max int
	b   []byte
	n   int64 // every byte written
}

func (h *headWriter) Write(p []byte) (int, error) {
	h.b = append(h.b, p[:min(len(p), h.max-len(h.b))]...)
	h.n += int64(len(p))
	return len(p), nil
}

// result is the output whole if it fit in max, else its head cut so that
// a mark with its real size fits after it within max.
func (h *headWriter) result() []byte {
	if h.n <= int64(h.max) {
		return h.b
	}
	// The mark names what is kept, which the mark's own length decides:
	// measured with max in its place, it can only be as long or shorter.
	keep := h.max - len(truncationMark(h.n, h.max))
	return append(h.b[:keep:keep], truncationMark(h.n, keep)...)
}

func truncationMark(total int64, kept int) string {
	return fmt.Sprintf("\n[lite: output truncated: %d bytes, the first %d kept]\n", total, kept)
}

// parseSize reads a byte count: a whole number, with B, KiB or MiB.
func parseSize(s string) (int, error) {
	m := sizePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, errors.New("give a whole number of bytes with B, KiB or MiB, as in 512KiB")
	}
	n, err := strconv.Atoi(m[1])
	unit := map[string]int{"": 1, "B": 1, "KiB": 1 << 10, "MiB": 1 << 20}[m[2]]
	if err != nil || n > maxMaxResult/unit {
		return 0, errors.New("too large")
	}
	return n * unit, nil
}

var sizePattern = regexp.MustCompile(`^([0-9]+)(B|KiB|MiB)?$`)

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return string(bytes.TrimSpace(t.b)) }
