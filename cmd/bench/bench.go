// Package bench is lite bench: it measures lite against the raw limits of
// SQLite on this machine, or of the PostgreSQL server it is given, in the
// same run, and reports each figure with its ratio and target. Its
// cross-process figures run the binary itself again (lite bench-child,
// which calls Child).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/liteq/lite/cmd/proc"
	"github.com/liteq/lite/lite"
)

// Flags are lite bench's flags. Run measures lite against the raw SQLite
// limits of this machine, measured in the same run with the same pragmas;
// or, when Env.DB names a PostgreSQL server, against that server's raw
// limits (see runServer).
type Flags struct {
	Dir       string        `type:"path" help:"Directory for the bench files (default: a temporary one, removed after)."`
	Duration  time.Duration `default:"1s" help:"How long each throughput figure runs."`
	Sync      []string      `default:"normal,full" enum:"normal,full" help:"Durability modes to measure."`
	Processes int           `default:"4" help:"Processes sharing one file in the multi-process figure."`
	BigRows   int           `default:"1000000" help:"Finished rows in the big-table figure (plus a tenth as many dead)."`
	Samples   int           `default:"200" help:"Jobs per latency figure."`
	Prefill   int           `help:"Jobs waiting at the start of each throughput figure (default, per second of --duration: 300k with NORMAL, 100k with FULL, 50k on PostgreSQL; a tenth as many of --durable's jobs of 10 steps; the files grow with it: a --duration 10s run writes about 2.5 GB)."`
	DrainJobs int           `default:"1000000" help:"Jobs a child process drains, with NORMAL, for the peak RSS figure."`
	Runs      int           `default:"1" help:"Measure every figure this many times and print each one's median and range."`
	Durable   bool          `help:"Measure durable execution too: jobs of 10 steps against plain ones, the CPU of an idle worker beside --parked sleeping jobs, a signal's latency from another process (a minute or so more a run)."`
	Parked    int           `default:"10000" help:"Jobs sleeping beside the idle worker of --durable."`
	Idle      time.Duration `default:"5s" help:"How long --durable watches an idle worker's CPU, each time."`
}

// Row is one figure of the report.
type Row struct {
	Sync    string  `json:"sync"`
	Figure  string  `json:"figure"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Ratio   float64 `json:"ratio,omitempty"`
	Against string  `json:"against,omitempty"`
	Target  string  `json:"target,omitempty"`
	Met     *bool   `json:"met,omitempty"`
	// With --runs above 1, Value and Ratio are medians, and these their
	// ranges over Runs runs.
	Min      float64 `json:"min,omitempty"`
	Max      float64 `json:"max,omitempty"`
	RatioMin float64 `json:"ratio_min,omitempty"`
	RatioMax float64 `json:"ratio_max,omitempty"`
	Runs     int     `json:"runs,omitempty"`
	// goal says whether the row meets its target, nil if it has none: it
	// is judged again on the medians of several runs.
	goal func(Row) bool
}

// judge sets Met from the row's goal.
func (row *Row) judge() {
	if row.goal != nil {
		met := row.goal(*row)
		row.Met = &met
	}
}

type benchRun struct {
	c    *Flags
	dir  string
	sync lite.Synchronous
	// server is the PostgreSQL server the run measures, nil on SQLite.
	server *pgServer
	name   string
	rows   []Row
	refs   map[string]float64
	// childRSS is the largest peak RSS, in bytes, that a bench child
	// reported.
	childRSS uint64
}

// Validate refuses a bench that would measure nothing, or a figure of
// nothing: a zero --duration gives references of 0 jobs/s, a zero
// --samples a latency of no sample, a zero --drain-jobs a drain that
// never reaches its count.
func (c *Flags) Validate() error {
	for _, f := range []struct {
		flag       string
		value, min int
	}{
		{"--runs", c.Runs, 1}, {"--processes", c.Processes, 1}, {"--samples", c.Samples, 1},
		{"--drain-jobs", c.DrainJobs, 1}, {"--big-rows", c.BigRows, 0}, {"--prefill", c.Prefill, 0},
		{"--parked", c.Parked, 1},
	} {
		if f.value < f.min {
			return fmt.Errorf("%s %d: must be at least %d", f.flag, f.value, f.min)
		}
	}
	for _, f := range []struct {
		flag string
		d    time.Duration
	}{{"--duration", c.Duration}, {"--idle", c.Idle}} {
		if f.d <= 0 {
			return fmt.Errorf("%s %s: must be more than zero", f.flag, f.d)
		}
	}
	return nil
}

// Env is what a bench is given besides its flags.
type Env struct {
	// DB is --db: a PostgreSQL URL has the bench measure that server;
	// anything else, SQLite files in Flags.Dir.
	DB string
	// Stderr takes the bench's progress and warnings.
	Stderr io.Writer
	// Field and Line make text from outside (the server's URL, its
	// version, its errors) safe to print, as the command line does: Field
	// one field, Line an error's message. The bench does not own that
	// escaping.
	Field, Line func(string) string
}

// Run measures every figure and returns them, the peak RSS of this process
// and of its children last.
func Run(ctx context.Context, c Flags, env Env) ([]Row, error) {
	if lite.IsServerURL(env.DB) {
		return c.runServer(ctx, env)
	}
	dir, err := benchDir(c.Dir)
	if err != nil {
		return nil, err
	}
	if c.Dir == "" {
		defer os.RemoveAll(dir)
	} else {
		fmt.Fprintf(env.Stderr, "the bench's files: %s\n", dir)
	}
	var runs [][]Row
	var childRSS uint64
	for run := range c.Runs {
		var rows []Row
		for _, name := range c.Sync {
			r := &benchRun{c: &c, dir: filepath.Join(dir, fmt.Sprintf("run-%d", run+1), name), name: name, refs: map[string]float64{},
				sync: map[string]lite.Synchronous{"normal": lite.SyncNormal, "full": lite.SyncFull}[name]}
			if err := os.MkdirAll(r.dir, 0o700); err != nil {
				return nil, err
			}
			fmt.Fprintf(env.Stderr, "run %d of %d: measuring synchronous=%s…\n", run+1, c.Runs, name)
			if err := r.all(ctx); err != nil {
				return nil, fmt.Errorf("bench %s: %w", name, err)
			}
			rows = append(rows, r.rows...)
			childRSS = max(childRSS, r.childRSS)
		}
		runs = append(runs, rows)
		if c.Dir == "" { // a run's files are large: keep one run's at a time
			if err := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("run-%d", run+1))); err != nil {
				return nil, err
			}
		}
	}
	return withRSS(combineRuns(runs), childRSS)
}

// benchDir makes the directory a bench writes into, one of its own in
// parent (the system's temporary directory if parent is empty), so that
// no figure opens an earlier bench's files and runs over its leftover
// jobs.
func benchDir(parent string) (string, error) {
	return os.MkdirTemp(parent, "lite-bench-")
}

// withRSS adds the peak RSS of this process and of its children to the
// figures.
func withRSS(rows []Row, childRSS uint64) ([]Row, error) {
	self, err := peakRSS()
	if err != nil {
		return nil, err
	}
	return append(rows,
		Row{Sync: "-", Figure: "peak RSS of this process", Value: mib(self), Unit: "MiB"},
		Row{Sync: "-", Figure: "peak RSS of a child process", Value: mib(childRSS), Unit: "MiB"}), nil
}

func mib(bytes uint64) float64 { return float64(bytes) / (1 << 20) }

func (r *benchRun) add(row Row) {
	row.Sync = r.name
	r.rows = append(r.rows, row)
}

// ratio adds a rate figure with its ratio to a reference and its target,
// if it has one (target > 0).
func (r *benchRun) ratio(figure string, rate float64, against string, target float64) {
	row := Row{Figure: figure, Value: rate, Unit: "jobs/s"}
	if ref := r.refs[against]; ref > 0 {
		row.Ratio, row.Against = rate/ref, against
	}
	// A reference that measured nothing gives no ratio, and no verdict.
	if target > 0 && row.Against != "" {
		row.Target = fmt.Sprintf(">= %gx", target)
		row.goal = func(row Row) bool { return row.Ratio >= target }
		row.judge()
	}
	r.add(row)
}

func (r *benchRun) all(ctx context.Context) error {
	raw, err := openRaw(ctx, r.dir, r.sync)
	if err != nil {
		return err
	}
	defer raw.Close()
	d := r.c.Duration
	for _, ref := range []struct {
		name string
		run  func() (float64, error)
	}{
		{"raw insert", func() (float64, error) { return rawInsert(ctx, raw, rawInsertSQL, d) }},
		{"R1", func() (float64, error) { return rawNaive(ctx, raw, d) }},
		{"R2", func() (float64, error) { return rawBatched(ctx, raw, d, r.prefill()) }},
	} {
		rate, err := ref.run()
		if err != nil {
			return fmt.Errorf("%s: %w", ref.name, err)
		}
		r.refs[ref.name] = rate
		r.add(Row{Figure: ref.name + " " + map[string]string{"raw insert": "(autocommit, SQLite alone)",
			"R1": "(insert, claim, complete: 3 transactions per job)", "R2": "(claim 100, complete 100 per transaction)"}[ref.name],
			Value: rate, Unit: "jobs/s"})
	}

	rates, err := r.enqueue(ctx)
	if err != nil {
		return err
	}
	r.addEnqueue(rates, 0.9, 3.5)

	plain := []workerFigure{{1, "R1", 1}, {16, "R2", 0.3}, {256, "R2", 0.5}}
	if err := r.workers(ctx, plain); err != nil {
		return err
	}

	inProcess, crossProcess, err := r.latency(ctx)
	if err != nil {
		return err
	}
	// FULL pays an fsync per commit that NORMAL does not, so its targets
	// are its own.
	if r.sync == lite.SyncNormal {
		r.addLatency("latency, same process", inProcess, 0.5, 1)
	} else {
		r.addLatency("latency, same process", inProcess, 1, 3)
	}
	r.addLatency("latency, another process", crossProcess, 5, 15)
	if err := r.calls(ctx); err != nil {
		return err
	}
	if r.c.Durable {
		if err := r.durable(ctx, plain); err != nil {
			return err
		}
	}
	many, busy, err := r.processes(ctx)
	if err != nil {
		return err
	}
	r.ratio(fmt.Sprintf("%d processes on one file, concurrency 64 each", r.c.Processes), many, "one process", 0.9)
	r.add(Row{Figure: fmt.Sprintf("busy errors the %d processes logged", r.c.Processes), Value: float64(busy), Unit: "errors"})
	if r.sync == lite.SyncNormal {
		return r.drainRSS(ctx)
	}
	return nil
}

// workerFigure is a worker's concurrency, the reference its rate is a
// ratio to, and the ratio's target (0: none).
type workerFigure struct {
	concurrency int
	against     string
	target      float64
}

// workers measures a worker with a no-op handler at each concurrency of
// figures, the last of which is 256, and then at 256 again over a table
// that holds BigRows finished and a tenth as many dead jobs: the hot
// paths read partial indexes, so the rate must not fall. Each rate is
// also the reference plainAt its concurrency.
func (r *benchRun) workers(ctx context.Context, figures []workerFigure) error {
	for _, f := range figures {
		rate, err := r.workerRate(ctx, fmt.Sprintf("worker-%d.db", f.concurrency), f.concurrency, 0)
		if err != nil {
			return err
		}
		r.ratio(fmt.Sprintf("worker, no-op handler, concurrency %d", f.concurrency), rate, f.against, f.target)
		r.refs["empty table"] = rate
		r.refs[plainAt(f.concurrency)] = rate
	}
	big, err := r.workerRate(ctx, "big.db", 256, r.c.BigRows)
	if err != nil {
		return err
	}
	r.ratio(fmt.Sprintf("worker, concurrency 256, %d finished + %d dead rows", r.c.BigRows, r.c.BigRows/10),
		big, "empty table", 0.9)
	return nil
}

// drainRSS has a child process drain DrainJobs jobs and reports its peak
// resident memory.
func (r *benchRun) drainRSS(ctx context.Context) error {
	q, db, err := r.open(ctx, "drain.db")
	if err != nil {
		return err
	}
	defer r.close(q, db)
	if err := r.fill(ctx, q, r.c.DrainJobs, lite.StateAvailable); err != nil {
		return err
	}
	child, err := r.child(ctx, db, "drain-all", strconv.Itoa(r.c.DrainJobs))
	if err != nil {
		return err
	}
	out, rss, err := r.wait(child)
	if err != nil {
		return err
	}
	rate, err := strconv.ParseFloat(out, 64)
	if err != nil {
		return fmt.Errorf("drain child said %q: %w", out, err)
	}
	row := Row{Figure: fmt.Sprintf("peak RSS of a process draining %d jobs, concurrency 256", r.c.DrainJobs),
		Value: mib(rss), Unit: "MiB", Target: "< 100 MiB", goal: func(row Row) bool { return row.Value < 100 }}
	row.judge()
	r.add(row)
	r.add(Row{Figure: fmt.Sprintf("rate of that drain of %d jobs", r.c.DrainJobs), Value: rate, Unit: "jobs/s"})
	return nil
}

// prefill is how many jobs wait at the start of a throughput figure:
// more than the fastest figure takes in --duration on this machine, so
// that none runs out (a figure that does ends there, see drain and
// rawBatched, rather than idle).
func (r *benchRun) prefill() int {
	if r.c.Prefill > 0 {
		return r.c.Prefill
	}
	perSecond := 300_000.0
	switch {
	case r.server != nil:
		perSecond = 50_000
	case r.sync == lite.SyncFull:
		perSecond = 100_000
	}
	return max(int(perSecond*r.c.Duration.Seconds()), 10_000)
}

// open opens a fresh queue for one figure: a new file in the run's
// directory, or a new schema on the server, so that no figure sees
// another's jobs. db is what --db takes to reach it.
func (r *benchRun) open(ctx context.Context, file string) (q *lite.Queue, db string, err error) {
	db = filepath.Join(r.dir, file)
	if r.server != nil {
		if db, err = r.server.schema(ctx); err != nil {
			return nil, "", err
		}
	}
	q, err = lite.Open(ctx, db, lite.Options{Synchronous: r.sync})
	return q, db, err
}

// close closes a figure's queue. On a server it drops the figure's
// schema as well (or the server's close does, at the end), so that its
// rows weigh on no later figure, which autovacuum would slow cleaning them
// up; a file stays until the run's directory goes.
func (r *benchRun) close(q *lite.Queue, db string) {
	q.Close()
	if r.server != nil {
		r.server.drop(db)
	}
}

// enqueueSizes are the batch sizes of the batched enqueue figures.
var enqueueSizes = []int{100, 1000}

// enqueue measures Enqueue one job per call, then EnqueueBatch at each
// of enqueueSizes: rates[0] is one per call, rates[i] batches of
// enqueueSizes[i-1].
func (r *benchRun) enqueue(ctx context.Context) (rates []float64, err error) {
	q, db, err := r.open(ctx, "enqueue.db")
	if err != nil {
		return nil, err
	}
	defer r.close(q, db)
	job := lite.NewJob{Queue: "bench", Kind: "noop", Payload: []byte("{}")}
	single, err := timed(r.c.Duration, func() (int, error) {
		_, err := q.Enqueue(ctx, job)
		return 1, err
	})
	if err != nil {
		return nil, err
	}
	rates = append(rates, single)
	for _, size := range enqueueSizes {
		jobs := slices.Repeat([]lite.NewJob{job}, size)
		batch, err := timed(r.c.Duration, func() (int, error) {
			_, err := q.EnqueueBatch(ctx, jobs)
			return len(jobs), err
		})
		if err != nil {
			return nil, err
		}
		rates = append(rates, batch)
	}
	return rates, nil
}

// addEnqueue adds the enqueue figures, with targets when one per call and
// batches have them (> 0).
func (r *benchRun) addEnqueue(rates []float64, single, batches float64) {
	r.ratio("enqueue, one per call", rates[0], "raw insert", single)
	for i, size := range enqueueSizes {
		r.ratio(fmt.Sprintf("enqueue, batches of %d", size), rates[i+1], "raw insert", batches)
	}
}

// fill inserts n jobs in state straight into lite's table, far faster
// than enqueueing them, to set up a run.
func (r *benchRun) fill(ctx context.Context, q *lite.Queue, n int, state lite.State) error {
	if r.server != nil {
		return r.server.fill(ctx, q, n, state)
	}
	now := time.Now().UnixMilli()
	_, err := q.DB().ExecContext(ctx, `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?1)
insert into lite_jobs (queue, kind, payload, state, run_at, max_attempts, created_at, finished_at)
select 'bench', 'noop', x'7b7d', ?2, ?3, 1, ?3, case when ?2 = 'available' then null else ?3 end from n`,
		n, string(state), now)
	return err
}

// plainAt names the reference of a worker with a no-op handler at
// concurrency.
func plainAt(concurrency int) string { return fmt.Sprintf("plain at %d", concurrency) }

// workerRate prefills jobs (after big finished and big/10 dead rows) and
// measures how fast a worker with a no-op handler drains them.
func (r *benchRun) workerRate(ctx context.Context, file string, concurrency, big int) (float64, error) {
	q, db, err := r.open(ctx, file)
	if err != nil {
		return 0, err
	}
	defer r.close(q, db)
	if big > 0 {
		if err := errors.Join(r.fill(ctx, q, big, lite.StateDone), r.fill(ctx, q, big/10, lite.StateDead)); err != nil {
			return 0, err
		}
	}
	prefill := r.prefill()
	if err := r.fill(ctx, q, prefill, lite.StateAvailable); err != nil {
		return 0, err
	}
	return drain(ctx, q, concurrency, r.c.Duration, int64(prefill), io.Discard, noop)
}

// noop is a plain job's handler.
func noop(context.Context, *lite.Job) error { return nil }

// drain runs a worker with handler h for d, or until it has ended limit
// runs (if limit > 0), and returns its rate: the runs that ended over the
// time until the last of them did. A run ends done, or parked by a
// handler that sleeps (see idleCPU). It runs on past d until concurrency
// runs have ended: a short d on a loaded machine can end before the
// worker has leased anything, and jobs of many steps (see stepsRate) end
// in waves, the jobs leased together ending together, of which one can
// take longer than d. A rate of what ended before a whole wave, or up to
// a time between two, measures the cut, not the worker.
func drain(ctx context.Context, q *lite.Queue, concurrency int, d time.Duration, limit int64, logs io.Writer, h lite.Handler) (float64, error) {
	var (
		mu      sync.Mutex
		start   time.Time
		ended   int64
		lastEnd time.Duration // from start to the latest run's end
	)
	enough, wave := make(chan struct{}), make(chan struct{})
	w, err := lite.NewWorker(q, lite.WorkerOptions{
		Concurrency: concurrency,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		OnEvent: func(ev lite.Event) {
			if ev.Kind != lite.EventDone && ev.Kind != lite.EventParked {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			ended++
			lastEnd = time.Since(start)
			if ended == int64(concurrency) {
				close(wave)
			}
			if ended == limit {
				close(enough)
			}
		},
	})
	if err != nil {
		return 0, err
	}
	w.Handle(lite.AnyKind, h)
	ctx, stop := context.WithCancel(ctx)
	finished := make(chan error, 1)
	start = time.Now()
	go func() { finished <- w.Run(ctx) }()
	var runErr error
	stopped := false // the worker's Run returned before it was told to
	select {
	case <-enough:
	case runErr = <-finished:
		stopped = true
	case <-time.After(d):
		select {
		case <-wave:
		case <-enough: // fewer than a wave
		case runErr = <-finished:
			stopped = true
		}
	}
	mu.Lock()
	n, elapsed := ended, lastEnd
	mu.Unlock()
	stop()
	if !stopped {
		runErr = <-finished
	}
	if runErr != nil || n == 0 {
		return 0, runErr
	}
	return float64(n) / elapsed.Seconds(), nil
}

// latency measures enqueue-to-handler-start for an idle worker, in this
// process and from a child process.
func (r *benchRun) latency(ctx context.Context) (inProcess, crossProcess []time.Duration, err error) {
	q, db, err := r.open(ctx, "latency.db")
	if err != nil {
		return nil, nil, err
	}
	defer r.close(q, db)
	starts := make(chan time.Duration, r.c.Samples)
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, err
	}
	w.Handle(lite.AnyKind, func(_ context.Context, job *lite.Job) error {
		stamp, _ := strconv.ParseInt(string(job.Payload), 10, 64)
		starts <- time.Since(time.Unix(0, stamp))
		return nil
	})
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	defer func() { stop(); <-ran }() // before the queue closes
	go func() { w.Run(runCtx); close(ran) }()

	inProcess = make([]time.Duration, r.c.Samples)
	for i := range inProcess {
		if _, err := q.Enqueue(ctx, lite.NewJob{Payload: strconv.AppendInt(nil, time.Now().UnixNano(), 10)}); err != nil {
			return nil, nil, err
		}
		inProcess[i] = <-starts
	}

	child, err := r.child(ctx, db, "latency", strconv.Itoa(r.c.Samples))
	if err != nil {
		return nil, nil, err
	}
	crossProcess = make([]time.Duration, r.c.Samples)
	for i := range crossProcess {
		select {
		case crossProcess[i] = <-starts:
		case <-time.After(10 * time.Second):
			return nil, nil, errors.New("latency: the child's jobs stopped coming")
		}
	}
	if _, _, err := r.wait(child); err != nil {
		return nil, nil, err
	}
	return inProcess, crossProcess, nil
}

// addLatency adds a latency figure's p50 and p99, each with its target
// in milliseconds; a target of 0 is none.
func (r *benchRun) addLatency(figure string, lat []time.Duration, p50, p99 float64) {
	r.addQuantiles(figure, lat, quantile{"p50", 0.5, p50}, quantile{"p99", 0.99, p99})
}

// quantile is one row of a latency figure: its name, where it lies among
// the samples (0.5: the median) and its target in milliseconds, 0 for
// none.
type quantile struct {
	name     string
	at, goal float64
}

// addQuantiles adds a latency figure's quantiles, one row each.
func (r *benchRun) addQuantiles(figure string, lat []time.Duration, quantiles ...quantile) {
	slices.Sort(lat)
	for _, p := range quantiles {
		row := Row{Figure: figure, Value: float64(lat[int(p.at*float64(len(lat)-1))]) / float64(time.Millisecond),
			Unit: "ms " + p.name}
		if p.goal > 0 {
			row.Target = fmt.Sprintf("< %g ms", p.goal)
			row.goal = func(row Row) bool { return row.Value < p.goal }
			row.judge()
		}
		r.add(row)
	}
}

// processes compares several processes draining one database with one:
// it returns the rate of r.c.Processes processes and how many busy errors
// they logged, and keeps one process's rate as the reference "one
// process".
func (r *benchRun) processes(ctx context.Context) (many float64, busy int, err error) {
	rate := func(n int) (float64, int, error) {
		q, db, err := r.open(ctx, fmt.Sprintf("procs-%d.db", n))
		if err != nil {
			return 0, 0, err
		}
		defer r.close(q, db)
		if err := r.fill(ctx, q, r.prefill(), lite.StateAvailable); err != nil {
			return 0, 0, err
		}
		var children []*childProc
		for range n {
			c, err := r.child(ctx, db, "drain", r.c.Duration.String())
			if err != nil {
				return 0, 0, err
			}
			children = append(children, c)
		}
		total, busy := 0.0, 0
		for _, c := range children {
			out, _, err := r.wait(c)
			if err != nil {
				return 0, 0, err
			}
			var jobsPerSec float64
			var errs int
			if _, err := fmt.Sscan(out, &jobsPerSec, &errs); err != nil {
				return 0, 0, fmt.Errorf("child said %q: %w", out, err)
			}
			total += jobsPerSec
			busy += errs
		}
		if err := r.ranOut(ctx, q, n); err != nil {
			return 0, 0, err
		}
		return total, busy, nil
	}
	one, _, err := rate(1)
	if err != nil {
		return 0, 0, err
	}
	r.refs["one process"] = one
	return rate(r.c.Processes)
}

// ranOut fails the figure of n processes if they left no job waiting:
// each child drains for --duration whatever the queue holds, so a queue
// emptied before the end would give a rate of the prefill, not of the
// processes.
func (r *benchRun) ranOut(ctx context.Context, q *lite.Queue, n int) error {
	backlog, err := q.Backlog(ctx)
	if err != nil {
		return err
	}
	for _, b := range backlog {
		if b.Counts[lite.StateAvailable] > 0 {
			return nil
		}
	}
	return fmt.Errorf("%d processes on one file: the %d jobs of the prefill ran out within --duration %s; raise --prefill",
		n, r.prefill(), r.c.Duration)
}

type childProc struct {
	cmd    *exec.Cmd
	out    strings.Builder
	tree   proc.Group
	unlock func()
}

// child starts this binary as a bench child on db. db goes in the
// environment, not on the command line, where anyone on the host could
// read a server URL's password.
func (r *benchRun) child(ctx context.Context, db, mode, arg string) (*childProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"bench-child", mode, arg}
	if r.server == nil {
		args = []string{"bench-child", "--sync", r.name, mode, arg}
	}
	c := &childProc{cmd: exec.CommandContext(ctx, exe, args...)}
	c.cmd.Env = append(os.Environ(), "LITE_DB="+db)
	c.cmd.Stdout = &c.out
	c.cmd.Stderr = os.Stderr
	// As a job's command is to lite work: a bench killed with no chance
	// to stop its children (SIGKILL) must not leave them draining on into
	// files that no one will remove.
	proc.SetTree(c.cmd)
	c.unlock = proc.LockThread()
	if err := c.cmd.Start(); err != nil {
		c.unlock()
		return nil, err
	}
	tree, err := proc.JoinTree(c.cmd)
	c.tree = tree
	if err != nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
		c.release()
		return nil, err
	}
	return c, nil
}

// release lets go of what the child's tree held once it has been reaped.
func (c *childProc) release() {
	c.tree.Close()
	c.unlock()
}

// wait waits for a bench child and returns what it printed and its peak
// RSS in bytes, which it reports itself on its last line: a parent can
// read a child's peak the same way on no two systems (and on Linux not
// correctly at all, see peakRSS).
func (r *benchRun) wait(c *childProc) (out string, rss uint64, err error) {
	err = c.cmd.Wait()
	c.release()
	if err != nil {
		return "", 0, fmt.Errorf("bench child: %w", err)
	}
	out = strings.TrimSpace(c.out.String())
	i := strings.LastIndex(out, "\n") + 1
	last, ok := strings.CutPrefix(out[i:], "peak-rss ")
	if ok {
		rss, err = strconv.ParseUint(last, 10, 64)
	}
	if !ok || err != nil {
		return "", 0, fmt.Errorf("bench child: no peak RSS in %q", out)
	}
	r.childRSS = max(r.childRSS, rss)
	return strings.TrimSpace(out[:i]), rss, nil
}

// ChildFlags are the flags of lite bench-child, the other process of lite
// bench's cross-process figures.
type ChildFlags struct {
	Sync string `enum:"normal,full" default:"normal"`
	Mode string `arg:"" enum:"latency,drain,drain-all,calls,idle"`
	Arg  string `arg:""`
}

// Child is a bench child on db: it does its mode's work, then prints its
// own peak RSS in bytes to out as its last line, "peak-rss N".
func Child(ctx context.Context, c ChildFlags, db string, out io.Writer) error {
	if err := c.run(ctx, db, out); err != nil {
		return err
	}
	rss, err := peakRSS()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "peak-rss %d\n", rss)
	return err
}

// run enqueues paced jobs stamped with their time (latency); drains jobs
// for a duration and prints its rate and how many busy errors its worker
// logged (drain); drains a number of jobs and prints its rate
// (drain-all); works durable calls until told to stop (calls, see
// serveCalls); or runs an idle worker for a duration and prints the CPU
// it used (idle, see watchIdle).
func (c *ChildFlags) run(ctx context.Context, db string, out io.Writer) error {
	sync := map[string]lite.Synchronous{"normal": lite.SyncNormal, "full": lite.SyncFull}[c.Sync]
	q, err := lite.Open(ctx, db, lite.Options{Synchronous: sync})
	if err != nil {
		return err
	}
	defer q.Close()
	if c.Mode == "latency" {
		n, err := strconv.Atoi(c.Arg)
		if err != nil {
			return err
		}
		for range n {
			if _, err := q.Enqueue(ctx, lite.NewJob{Payload: strconv.AppendInt(nil, time.Now().UnixNano(), 10)}); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond) // let the worker go idle again
		}
		return nil
	}
	if c.Mode == "calls" {
		return serveCalls(ctx, q, out)
	}
	if c.Mode == "idle" {
		d, err := time.ParseDuration(c.Arg)
		if err != nil {
			return err
		}
		return watchIdle(ctx, q, d, out)
	}
	if c.Mode == "drain-all" {
		n, err := strconv.ParseInt(c.Arg, 10, 64)
		if err != nil {
			return err
		}
		rate, err := drain(ctx, q, 256, time.Hour, n, io.Discard, noop)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%.0f\n", rate)
		return err
	}
	d, err := time.ParseDuration(c.Arg)
	if err != nil {
		return err
	}
	logs := &proc.Buffer{}
	rate, err := drain(ctx, q, 64, d, 0, logs, noop)
	if err != nil {
		return err
	}
	busy := strings.Count(logs.String(), "database is locked") + strings.Count(logs.String(), "SQLITE_BUSY")
	_, err = fmt.Fprintf(out, "%f %d\n", rate, busy)
	return err
}
