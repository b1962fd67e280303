// Command river measures River (github.com/riverqueue/river, driver
// riverpgxv5) on a PostgreSQL server, figure for figure as `lite bench
// --db` measures lite there, so that the two can be set side by side on
// one server in one session. It is a module of its own: lite does not
// depend on River.
//
// Run it against an empty database of a server you own, with lite bench
// on the same server next to it:
//
//	. .ci/postgres && pg_start
//	(cd bench/river && go run . -db "$LITE_TEST_POSTGRES" -duration 2s)
//	go run . bench --db "$LITE_TEST_POSTGRES" --duration 2s
//
// River is tuned as for a throughput run: one queue with MaxWorkers 1000,
// FetchCooldown 1 ms (River's floor; its default is 100 ms), and a pgx
// pool of -max-conns connections (pgxpool's default, the larger of 4 and
// the CPU count, if 0). Each figure runs in a schema of its own,
// river_bench_<pid>_<n>, migrated by rivermigrate when the figure begins
// and dropped after it, and the server is checkpointed before each
// figure, as lite bench does. The figures:
//
//   - insert, one per call: Client.Insert, jobs/s over -duration;
//   - insert, batches of 100: Client.InsertMany, and InsertManyFast (COPY);
//   - prefilled jobs run: -prefill jobs inserted (InsertManyFast) and
//     vacuumed and analyzed, then a client with a no-op worker started,
//     jobs completed (River's completed events, sent once a completion
//     is committed) per second over -duration;
//   - latency: enqueue to the start of the job's Work, -samples jobs one
//     after another, inserted by the working client itself (same
//     process) and then by an insert-only client in a child process
//     (this program again) that paces its inserts 20 ms apart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// childEnv carries the database URL to the latency child, out of its
// command line, where anyone on the host could read a password.
const childEnv = "RIVER_BENCH_DB"

type flags struct {
	db       string
	duration time.Duration
	prefill  int
	samples  int
	maxConns int
	child    bool
}

func main() {
	var f flags
	flag.StringVar(&f.db, "db", os.Getenv("LITE_TEST_POSTGRES"), "PostgreSQL URL (default $LITE_TEST_POSTGRES)")
	flag.DurationVar(&f.duration, "duration", time.Second, "how long each throughput figure runs")
	flag.IntVar(&f.prefill, "prefill", 0, "jobs waiting when the prefilled figure starts (default 50k per second of -duration, as lite bench on PostgreSQL)")
	flag.IntVar(&f.samples, "samples", 200, "jobs per latency figure")
	flag.IntVar(&f.maxConns, "max-conns", 0, "the pgx pool's connections (0: pgxpool's default)")
	flag.BoolVar(&f.child, "latency-child", false, "internal: insert -samples stamped jobs into the schema of $"+childEnv)
	flag.Parse()
	ctx := context.Background()
	var err error
	if f.child {
		err = f.latencyChild(ctx, os.Getenv(childEnv))
	} else {
		err = f.run(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

// stampArgs are the jobs' arguments: the time they were inserted, in
// nanoseconds, for the latency figures (0 elsewhere).
type stampArgs struct {
	Stamp int64 `json:"stamp"`
}

func (stampArgs) Kind() string { return "noop" }

func (f *flags) run(ctx context.Context) error {
	if f.db == "" {
		return errors.New("no -db (or $LITE_TEST_POSTGRES)")
	}
	if f.duration <= 0 || f.samples < 1 || f.prefill < 0 {
		return errors.New("-duration must be positive, -samples at least 1, -prefill not negative")
	}
	if f.prefill == 0 {
		f.prefill = max(int(50_000*f.duration.Seconds()), 10_000)
	}
	admin, err := pgxpool.New(ctx, f.db)
	if err != nil {
		return err
	}
	defer admin.Close()
	b := &bench{flags: f, admin: admin}
	defer b.dropAll()
	var version, fsync, commit string
	if err := admin.QueryRow(ctx, `select current_setting('server_version'), current_setting('fsync'),
    current_setting('synchronous_commit')`).Scan(&version, &fsync, &commit); err != nil {
		return err
	}
	fmt.Printf("River v0.51.2, riverpgxv5, MaxWorkers 1000, FetchCooldown 1ms, max-conns %d; PostgreSQL %s, fsync %s, synchronous_commit %s\n",
		f.maxConns, version, fsync, commit)
	for _, fig := range []func(context.Context) error{b.inserts, b.prefilled, b.latency} {
		if err := fig(ctx); err != nil {
			return err
		}
	}
	return nil
}

// bench is one run of the figures, and the schemas it made.
type bench struct {
	*flags
	admin *pgxpool.Pool
	made  []string
}

// figure is one figure's schema, its pool, and a client on them (with
// the no-op worker, whose Work calls work, when working).
type figure struct {
	schema string
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
}

// figure makes a fresh schema, migrates River into it, and opens a pool
// and a client on it. A client with work set works the default queue.
func (b *bench) figure(ctx context.Context, work func(*river.Job[stampArgs])) (*figure, error) {
	if _, err := b.admin.Exec(ctx, "checkpoint"); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	name := fmt.Sprintf("river_bench_%d_%d", os.Getpid(), len(b.made)+1)
	if _, err := b.admin.Exec(ctx, "create schema "+name); err != nil {
		return nil, err
	}
	b.made = append(b.made, name)
	pool, err := b.pool(ctx, b.db)
	if err != nil {
		return nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: name, Logger: quiet()})
	if err == nil {
		_, err = migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	}
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	client, err := newClient(pool, name, work)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &figure{schema: name, pool: pool, client: client}, nil
}

func (b *bench) pool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if b.maxConns > 0 {
		cfg.MaxConns = int32(b.maxConns)
	}
	return pgxpool.NewWithConfig(ctx, cfg)
}

// newClient is a tuned River client on schema: insert-only if work is
// nil, else working the default queue with the no-op worker.
func newClient(pool *pgxpool.Pool, schema string, work func(*river.Job[stampArgs])) (*river.Client[pgx.Tx], error) {
	// FetchCooldown also spaces an inserting client's notifications: at
	// River's default an insert-only client wakes the workers for one
	// insert in 100 ms.
	cfg := &river.Config{Schema: schema, Logger: quiet(), FetchCooldown: time.Millisecond}
	if work != nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(_ context.Context, job *river.Job[stampArgs]) error {
			work(job)
			return nil
		}))
		cfg.Workers = workers
		cfg.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 1000}}
	}
	return river.NewClient(riverpgxv5.New(pool), cfg)
}

func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// close stops the figure's client if it was started, closes its pool and
// drops its schema.
func (b *bench) close(f *figure, started bool) {
	if started {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := f.client.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "river bench: stop:", err)
		}
		cancel()
	}
	f.pool.Close()
	b.drop(f.schema)
}

func (b *bench) drop(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := b.admin.Exec(ctx, "drop schema if exists "+name+" cascade"); err != nil {
		fmt.Fprintf(os.Stderr, "river bench: drop schema %s: %v\n", name, err)
		return
	}
	b.made = slices.DeleteFunc(b.made, func(s string) bool { return s == name })
}

// dropAll drops the schemas a figure that failed left behind.
func (b *bench) dropAll() {
	for _, name := range slices.Clone(b.made) {
		b.drop(name)
	}
}

// inserts measures Insert one per call, then InsertMany and
// InsertManyFast in batches of 100, each for -duration in one schema.
func (b *bench) inserts(ctx context.Context) error {
	f, err := b.figure(ctx, nil)
	if err != nil {
		return err
	}
	defer b.close(f, false)
	one, err := timed(b.duration, func() (int, error) {
		_, err := f.client.Insert(ctx, stampArgs{}, nil)
		return 1, err
	})
	if err != nil {
		return fmt.Errorf("insert: %w", err)
	}
	report("insert, one per call (Insert)", one, "jobs/s")
	batch := slices.Repeat([]river.InsertManyParams{{Args: stampArgs{}}}, 100)
	for _, m := range []struct {
		name   string
		insert func() error
	}{
		{"insert, batches of 100 (InsertMany)", func() error { _, err := f.client.InsertMany(ctx, batch); return err }},
		{"insert, batches of 100 (InsertManyFast, COPY)", func() error { _, err := f.client.InsertManyFast(ctx, batch); return err }},
	} {
		rate, err := timed(b.duration, func() (int, error) { return len(batch), m.insert() })
		if err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		report(m.name, rate, "jobs/s")
	}
	return nil
}

// prefilled measures how fast a tuned client runs -prefill waiting jobs
// with a no-op worker, counting the completions River commits.
func (b *bench) prefilled(ctx context.Context) error {
	f, err := b.figure(ctx, func(*river.Job[stampArgs]) {})
	if err != nil {
		return err
	}
	started := false
	defer func() { b.close(f, started) }()
	if err := b.fill(ctx, f); err != nil {
		return err
	}
	events, cancel := f.client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: b.prefill})
	defer cancel()
	var done atomic.Int64
	first := make(chan struct{})
	go func() {
		for range events {
			if done.Add(1) == 1 {
				close(first)
			}
		}
	}()
	start := time.Now()
	if err := f.client.Start(ctx); err != nil {
		return err
	}
	started = true
	time.Sleep(b.duration)
	<-first // as lite bench: a rate of zero measures nothing
	n, elapsed := done.Load(), time.Since(start)
	if n >= int64(b.prefill) {
		return fmt.Errorf("prefilled: the %d jobs ran out within -duration %s; raise -prefill", b.prefill, b.duration)
	}
	report(fmt.Sprintf("prefilled jobs run, no-op worker (%d waiting)", b.prefill), float64(n)/elapsed.Seconds(), "jobs/s")
	return nil
}

// fill inserts -prefill available jobs, 10,000 a COPY, and vacuums and
// analyzes River's table, as lite bench settles lite's.
func (b *bench) fill(ctx context.Context, f *figure) error {
	for left := b.prefill; left > 0; left -= 10_000 {
		batch := slices.Repeat([]river.InsertManyParams{{Args: stampArgs{}}}, min(left, 10_000))
		if _, err := f.client.InsertManyFast(ctx, batch); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
	}
	if _, err := f.pool.Exec(ctx, "vacuum analyze "+f.schema+".river_job"); err != nil {
		return err
	}
	_, err := b.admin.Exec(ctx, "checkpoint")
	return err
}

// latency measures enqueue to Work's start on an idle tuned client, for
// jobs it inserts itself and then for jobs a child process inserts.
func (b *bench) latency(ctx context.Context) error {
	starts := make(chan time.Duration, b.samples)
	f, err := b.figure(ctx, func(job *river.Job[stampArgs]) {
		starts <- time.Since(time.Unix(0, job.Args.Stamp))
	})
	if err != nil {
		return err
	}
	started := false
	defer func() { b.close(f, started) }()
	if err := f.client.Start(ctx); err != nil {
		return err
	}
	started = true
	time.Sleep(time.Second) // the client's producer and listener are up
	same := make([]time.Duration, b.samples)
	for i := range same {
		if _, err := f.client.Insert(ctx, stampArgs{Stamp: time.Now().UnixNano()}, nil); err != nil {
			return err
		}
		same[i] = <-starts
	}
	reportLatency("latency, same process", same)
	other, err := b.fromChild(ctx, f.schema, starts)
	if err != nil {
		return err
	}
	reportLatency("latency, another process, LISTEN/NOTIFY", other)
	return nil
}

// fromChild runs this program as an insert-only child on schema and
// collects the latencies of its jobs.
func (b *bench) fromChild(ctx context.Context, schema string, starts <-chan time.Duration) ([]time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(b.db)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	q.Set("river_schema", schema) // read back by the child, not by the server
	u.RawQuery = q.Encode()
	cmd := exec.CommandContext(ctx, exe, "-latency-child", "-samples", strconv.Itoa(b.samples), "-max-conns", strconv.Itoa(b.maxConns))
	cmd.Env = append(os.Environ(), childEnv+"="+u.String())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, b.samples)
	for i := range lat {
		select {
		case lat[i] = <-starts:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, errors.New("latency: the child's jobs stopped coming")
		}
	}
	return lat, cmd.Wait()
}

// latencyChild inserts -samples jobs stamped with their time, 20 ms
// apart (so that the worker is idle again for each), into the schema the
// URL's river_schema parameter names.
func (f *flags) latencyChild(ctx context.Context, dsn string) error {
	u, err := url.Parse(dsn)
	if err != nil {
		return err
	}
	q := u.Query()
	schema := q.Get("river_schema")
	q.Del("river_schema")
	u.RawQuery = q.Encode()
	b := &bench{flags: f}
	pool, err := b.pool(ctx, u.String())
	if err != nil {
		return err
	}
	defer pool.Close()
	client, err := newClient(pool, schema, nil)
	if err != nil {
		return err
	}
	for range f.samples {
		if _, err := client.Insert(ctx, stampArgs{Stamp: time.Now().UnixNano()}, nil); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// timed calls op until d has passed and returns how many jobs per second
// it did; op returns how many jobs its call did.
func timed(d time.Duration, op func() (int, error)) (float64, error) {
	start := time.Now()
	n := 0
	for time.Since(start) < d {
		k, err := op()
		if err != nil {
			return 0, err
		}
		n += k
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func report(figure string, value float64, unit string) {
	fmt.Printf("%-60s %10.1f %s\n", figure, value, unit)
}

func reportLatency(figure string, lat []time.Duration) {
	slices.Sort(lat)
	for _, p := range []struct {
		name string
		at   float64
	}{{"p50", 0.5}, {"p99", 0.99}} {
		report(figure, float64(lat[int(p.at*float64(len(lat)-1))])/float64(time.Millisecond), "ms "+p.name)
	}
}
