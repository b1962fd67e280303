package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the raw references and the schemas
	"github.com/liteq/lite/lite"
)

// On PostgreSQL, lite bench measures lite against the server it is given,
// in the same run: a raw reference on a minimal jobs table without
// fencing, and lite's figures as ratios to it. Every figure runs in a
// schema of its own, made for it and dropped after it, so that none sees
// another's jobs, and the database is left as it was found.

// runServer measures the server at --db. Durability is the server's
// (fsync, synchronous_commit), so the durability modes of --sync are
// not measured, nor the memory of a --drain-jobs drain, which measures
// SQLite's page cache.
func (c *Flags) runServer(ctx context.Context, env Env) ([]Row, error) {
	s, err := openPGServer(ctx, env.DB, env.Stderr, env.Line)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer s.close()
	fmt.Fprintf(env.Stderr, "measuring %s (%s), each figure in a schema of its own, %s1, 2…, dropped after it\n",
		env.Field(lite.Redact(env.DB)), env.Field(s.about), s.prefix())
	fmt.Fprintln(env.Stderr, "skipped on PostgreSQL: --sync (the server's fsync and synchronous_commit decide) and the peak RSS of a --drain-jobs drain")
	var runs [][]Row
	var childRSS uint64
	for run := range c.Runs {
		fmt.Fprintf(env.Stderr, "run %d of %d\n", run+1, c.Runs)
		r := &benchRun{c: c, server: s, name: "postgres", refs: map[string]float64{}}
		if err := r.allServer(ctx); err != nil {
			return nil, fmt.Errorf("bench postgres: %w", err)
		}
		runs = append(runs, r.rows)
		childRSS = max(childRSS, r.childRSS)
	}
	return withRSS(combineRuns(runs), childRSS)
}

func (r *benchRun) allServer(ctx context.Context) error {
	d := r.c.Duration
	for _, ref := range []struct {
		name, about string
		prefill     int
		run         func(db *sql.DB) (float64, error)
	}{
		{"raw insert", "(autocommit, PostgreSQL alone)", 0, func(db *sql.DB) (float64, error) {
			return rawInsert(ctx, db, rawInsertServerSQL, d)
		}},
		{"R2", "(claim 100 with SKIP LOCKED, complete the 100 in one statement)", r.prefill(), func(db *sql.DB) (float64, error) {
			return rawBatchedServer(ctx, db, d)
		}},
	} {
		rate, err := r.server.raw(ctx, ref.prefill, ref.run)
		if err != nil {
			return fmt.Errorf("%s: %w", ref.name, err)
		}
		r.refs[ref.name] = rate
		r.add(Row{Figure: ref.name + " " + ref.about, Value: rate, Unit: "jobs/s"})
	}

	rates, err := r.enqueue(ctx)
	if err != nil {
		return err
	}
	r.addEnqueue(rates, 0, 0)

	plain := []workerFigure{{16, "R2", 0}, {256, "R2", 0.5}}
	if err := r.workers(ctx, plain); err != nil {
		return err
	}

	inProcess, crossProcess, err := r.latency(ctx)
	if err != nil {
		return err
	}
	r.addLatency("latency, same process", inProcess, 0, 0)
	r.addLatency("latency, another process, LISTEN/NOTIFY", crossProcess, 5, 0)
	if err := r.calls(ctx); err != nil {
		return err
	}
	if r.c.Durable {
		if err := r.durable(ctx, plain); err != nil {
			return err
		}
	}
	many, _, err := r.processes(ctx)
	if err != nil {
		return err
	}
	r.ratio(fmt.Sprintf("%d processes on one database, concurrency 64 each", r.c.Processes), many, "one process", 1.5)
	return nil
}

// pgServer is the server a bench measures, and the schemas it made there.
type pgServer struct {
	url   string // as given, password and all: never printed
	admin *sql.DB
	about string // the server's version and durability settings
	made  map[string]string
	n     int

	warnings     io.Writer
	line         func(string) string // escapes an error's message (Env.Line)
	noCheckpoint bool                // the role may not checkpoint; said once
}

func openPGServer(ctx context.Context, dsn string, warnings io.Writer, line func(string) string) (*pgServer, error) {
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, err
	}
	s := &pgServer{url: dsn, admin: admin, made: map[string]string{}, warnings: warnings, line: line}
	var version, fsync, commit string
	if err := admin.QueryRowContext(ctx, `select current_setting('server_version'), current_setting('fsync'),
    current_setting('synchronous_commit')`).Scan(&version, &fsync, &commit); err != nil {
		admin.Close()
		return nil, err
	}
	s.about = fmt.Sprintf("PostgreSQL %s, fsync %s, synchronous_commit %s", version, fsync, commit)
	return s, nil
}

// prefix begins the name of every schema the bench makes.
func (s *pgServer) prefix() string { return fmt.Sprintf("lite_bench_%d_", os.Getpid()) }

// schema makes an empty schema and returns a URL whose connections use
// it. It checkpoints first, so that the writes of earlier figures are on
// disk and the server's flushing them slows no later figure.
func (s *pgServer) schema(ctx context.Context) (string, error) {
	if err := s.checkpoint(ctx); err != nil {
		return "", err
	}
	s.n++
	name := fmt.Sprintf("%s%d", s.prefix(), s.n)
	u, err := url.Parse(s.url)
	if err != nil {
		return "", err
	}
	if _, err := s.admin.ExecContext(ctx, "create schema "+name); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	s.made[u.String()] = name
	return u.String(), nil
}

// drop drops the schema that db uses, with everything in it. It runs
// after the figure, whether or not the bench was interrupted; a schema it
// could not drop is tried again at the end.
func (s *pgServer) drop(db string) error {
	name, ok := s.made[db]
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, "drop schema if exists "+name+" cascade"); err != nil {
		return fmt.Errorf("drop schema %s: %w", name, err)
	}
	delete(s.made, db)
	return nil
}

// settle makes table, just filled, look as a table in service does to
// the server, and checkpoints: vacuumed, so that autovacuum does not
// start on the fill during the figure, and analyzed. A table that was
// never analyzed has no statistics, and the planner then guesses a few
// available jobs where there are many: it sorted every one of them for
// each lease (EXPLAIN ANALYZE, 300k jobs: 120 ms a lease of 256, against
// 0.2 ms through the lease index once analyzed). Autovacuum analyzes a
// table in service within a minute of a fill like this.
func (s *pgServer) settle(ctx context.Context, db *sql.DB, table string) error {
	if _, err := db.ExecContext(ctx, "vacuum analyze "+table); err != nil {
		return err
	}
	return s.checkpoint(ctx)
}

// checkpoint writes every dirty page to disk now, when a figure is not
// running. A role that may not checkpoint (neither superuser nor
// pg_checkpoint) measures without, and is told so once.
func (s *pgServer) checkpoint(ctx context.Context) error {
	if s.noCheckpoint {
		return nil
	}
	_, err := s.admin.ExecContext(ctx, "checkpoint")
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) && pgErr.SQLState() == "42501" { // insufficient_privilege
		s.noCheckpoint = true
		fmt.Fprintln(s.warnings, "this role may not checkpoint: a figure may be slowed by the server writing out the one before")
		return nil
	}
	return err
}

// close drops the schemas that are left, and disconnects. A schema that
// cannot be dropped is named, for its owner to drop.
func (s *pgServer) close() {
	for db := range s.made {
		if err := s.drop(db); err != nil {
			fmt.Fprintf(s.warnings, "lite bench: %s\n", s.line(err.Error()))
		}
	}
	s.admin.Close()
}

// raw runs a raw reference on a minimal jobs table of a fresh schema,
// which holds prefill available jobs when it starts.
func (s *pgServer) raw(ctx context.Context, prefill int, measure func(*sql.DB) (float64, error)) (float64, error) {
	dsn, err := s.schema(ctx)
	if err != nil {
		return 0, err
	}
	defer s.drop(dsn) // or at the end, by close
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `create table jobs (
    id bigint generated always as identity primary key, state text not null, payload bytea not null, result bytea);
create index jobs_available on jobs (id) where state = 'available'`); err != nil {
		return 0, err
	}
	if prefill > 0 {
		if _, err := db.ExecContext(ctx, `insert into jobs (state, payload)
select 'available', '\x7b7d'::bytea from generate_series(1, $1)`, prefill); err != nil {
			return 0, err
		}
		if err := s.settle(ctx, db, "jobs"); err != nil {
			return 0, err
		}
	}
	return measure(db)
}

const rawInsertServerSQL = `insert into jobs (state, payload) values ('available', $1)`

// rawBatchedServer (R2 on a server): prefilled jobs, claimed 100 at a
// time by one statement that skips the rows other claims hold, as a
// queue shared by many hosts claims, and completed 100 at a time by one
// statement.
func rawBatchedServer(ctx context.Context, db *sql.DB, d time.Duration) (float64, error) {
	claim, err := db.PrepareContext(ctx, `update jobs set state = 'running'
where id = any(array(select id from jobs where state = 'available' order by id limit 100 for update skip locked))
returning id`)
	if err != nil {
		return 0, err
	}
	defer claim.Close()
	complete, err := db.PrepareContext(ctx, `update jobs set state = 'done', result = $1 where id = any($2)`)
	if err != nil {
		return 0, err
	}
	defer complete.Close()
	return timed(d, func() (int, error) {
		ids, err := claimIDs(ctx, claim)
		if err != nil {
			return 0, err
		}
		if len(ids) == 0 {
			return 0, nil
		}
		_, err = complete.ExecContext(ctx, []byte("ok"), ids)
		return len(ids), err
	})
}

// fill is benchRun.fill on the server, which then settles the table.
// Times come from the server's clock, as the queue's do, so that the jobs
// are due whatever this host's clock says.
func (s *pgServer) fill(ctx context.Context, q *lite.Queue, n int, state lite.State) error {
	_, err := q.DB().ExecContext(ctx, `insert into lite_jobs (queue, kind, payload, state, run_at, max_attempts, created_at, finished_at)
select 'bench', 'noop', '\x7b7d'::bytea, $2::text, t.now, 1, t.now, case when $2::text = 'available' then null else t.now end
from generate_series(1, $1), (select (extract(epoch from now()) * 1000)::bigint as now) as t`, n, string(state))
	if err != nil {
		return err
	}
	return s.settle(ctx, q.DB(), "lite_jobs")
}
