package litetest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/liteq/lite/lite"
)

// litetest reaches the server through the "pgx" database/sql driver that
// lite/pg registers, and imports neither: a test binary links pgx only if
// it imports lite/pg, as a program does.
const pgDriver = "pgx"

// A pgServer is one test server, with the schemas this process made on
// it. Migrating a fresh schema is most of what a PostgreSQL test costs (a
// hundred milliseconds of DDL, and as much again to drop it), so under
// Main a schema is recycled for the next test once its own test ends:
// lite's tables emptied and their ids starting over, whatever else the
// test made dropped. Only a schema whose objects are then exactly a fresh
// one's is recycled; any other is dropped, so a test that changed lite's
// tables never leaks into the next.
type pgServer struct {
	url   string
	admin *sql.DB

	refMu     sync.Mutex
	reference string // the fingerprint of a freshly migrated schema

	mu   sync.Mutex
	free []string // recycled schemas, migrated and empty
	made []string // every schema this process made, for Main to drop
}

var (
	pgServers struct {
		sync.Mutex
		m map[string]*pgServer
	}
	recycling atomic.Bool  // Main runs the tests
	schemas   atomic.Int64 // numbers the schemas this process makes
)

// testServer is the server LITE_TEST_POSTGRES names, connected to once
// per process.
func testServer(tb testing.TB) *pgServer {
	tb.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		RequirePostgres(tb)
	}
	if !slices.Contains(sql.Drivers(), pgDriver) {
		tb.Fatalf("litetest: %s is set but this test binary has no PostgreSQL support: import _ \"github.com/liteq/lite/lite/pg\"", PostgresEnv)
	}
	pgServers.Lock()
	defer pgServers.Unlock()
	if s, ok := pgServers.m[base]; ok {
		return s
	}
	admin, err := sql.Open(pgDriver, base)
	if err != nil {
		tb.Fatalf("litetest: %s: %v", PostgresEnv, err)
	}
	if pgServers.m == nil {
		pgServers.m = map[string]*pgServer{}
	}
	s := &pgServer{url: base, admin: admin}
	pgServers.m[base] = s
	return s
}

// newSchema makes an empty schema for one test and returns a URL whose
// connections use it; the schema is dropped when the test ends.
func newSchema(tb testing.TB) string {
	tb.Helper()
	s := testServer(tb)
	name, err := s.create(tb.Context())
	if err != nil {
		tb.Fatalf("litetest: %v", err)
	}
	tb.Cleanup(func() { s.admin.Exec("drop schema " + name + " cascade") })
	return s.schemaURL(name)
}

// takeSchema gives one test a schema of its own, migrated or empty, and
// returns a URL whose connections use it. It is given back (recycled or
// dropped) when the test ends.
func takeSchema(tb testing.TB) string {
	tb.Helper()
	if !recycling.Load() {
		return newSchema(tb)
	}
	s := testServer(tb)
	name, err := s.take(tb.Context())
	if err != nil {
		tb.Fatalf("litetest: %v", err)
	}
	// Registered before the queue's own cleanup, so it runs after the
	// queue closed.
	tb.Cleanup(func() { s.give(name) })
	return s.schemaURL(name)
}

// schemaURL is a URL on s whose connections use schema name.
func (s *pgServer) schemaURL(name string) string {
	u, err := url.Parse(s.url)
	if err != nil {
		panic(err) // unreachable: the admin connected with it
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

func (s *pgServer) create(ctx context.Context) (string, error) {
	name := fmt.Sprintf("lite_test_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := s.admin.ExecContext(ctx, "create schema "+name); err != nil {
		return "", fmt.Errorf("create schema: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made = append(s.made, name)
	return name, nil
}

// take returns an empty schema: a recycled one, or a new one that lite
// migrates when the test opens it.
func (s *pgServer) take(ctx context.Context) (string, error) {
	if err := s.fingerprintFresh(ctx); err != nil {
		return "", err
	}
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		name := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return name, nil
	}
	s.mu.Unlock()
	return s.create(ctx)
}

// fingerprintFresh, the first time, lets lite migrate a new schema,
// fingerprints it as the reference that a recycled schema must match, and
// keeps it free for a test.
func (s *pgServer) fingerprintFresh(ctx context.Context) error {
	s.refMu.Lock()
	defer s.refMu.Unlock()
	if s.reference != "" {
		return nil
	}
	name, err := s.create(ctx)
	if err != nil {
		return err
	}
	q, err := lite.Open(ctx, s.schemaURL(name), lite.Options{})
	if err != nil {
		return err
	}
	q.Close()
	tx, err := s.admin.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if s.reference, err = fingerprint(ctx, tx, name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, name)
	return nil
}

// give recycles a test's schema, or drops it.
func (s *pgServer) give(name string) {
	ctx := context.Background()
	if err := s.recycle(ctx, name); err != nil {
		s.admin.ExecContext(ctx, "drop schema "+name+" cascade")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free = append(s.free, name)
}

// liteTables are the tables lite's migrations make.
const liteTables = `'lite_jobs', 'lite_workers', 'lite_migrations'`

func (s *pgServer) recycle(ctx context.Context, name string) error {
	tx, err := s.admin.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// A connection the test left open must not make the next test wait.
	if _, err := tx.ExecContext(ctx, "set local lock_timeout = '2s'"); err != nil {
		return err
	}
	drops, err := strayObjects(ctx, tx, name)
	if err != nil {
		return err
	}
	for _, d := range drops {
		if _, err := tx.ExecContext(ctx, d); err != nil {
			return err
		}
	}
	got, err := fingerprint(ctx, tx, name)
	if err != nil {
		return err
	}
	s.refMu.Lock()
	ref := s.reference
	s.refMu.Unlock()
	if got != ref {
		return fmt.Errorf("schema %s differs from a fresh one", name)
	}
	for _, d := range []string{
		"delete from " + name + ".lite_jobs",
		"delete from " + name + ".lite_workers",
		"alter table " + name + ".lite_jobs alter column id restart",
	} {
		if _, err := tx.ExecContext(ctx, d); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// strayObjects are the statements that drop what a test made in schema
// name beside lite's own tables and trigger function.
func strayObjects(ctx context.Context, tx *sql.Tx, name string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `select format('drop %s if exists %I.%I cascade',
    case c.relkind when 'v' then 'view' when 'm' then 'materialized view' when 'S' then 'sequence' else 'table' end,
    n.nspname, c.relname)
from pg_class c join pg_namespace n on n.oid = c.relnamespace
where n.nspname = $1 and c.relkind in ('r', 'p', 'v', 'm', 'f')
  and c.relname not in (`+liteTables+`)
union all
select format('drop function if exists %I.%I cascade', n.nspname, p.proname)
from pg_proc p join pg_namespace n on n.oid = p.pronamespace
where n.nspname = $1 and p.proname <> 'lite_jobs_notify'`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var drops []string
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			return nil, err
		}
		drops = append(drops, d)
	}
	return drops, rows.Err()
}

// fingerprint describes every object in the schema: relations, columns,
// defaults, constraints, indexes, triggers and functions.
func fingerprint(ctx context.Context, tx *sql.Tx, name string) (string, error) {
	// Inside the schema, definitions name its objects without it.
	if _, err := tx.ExecContext(ctx, "set local search_path = "+name); err != nil {
		return "", err
	}
	var fp sql.NullString
	err := tx.QueryRowContext(ctx, `select string_agg(x, E'\n' order by x) from (
    select 'relation ' || c.relname || ' ' || c.relkind::text
    from pg_class c where c.relnamespace = $1::regnamespace
    union all
    select 'column ' || c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
        || ' ' || a.attnotnull::text || ' ' || a.attidentity::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
    from pg_attribute a join pg_class c on c.oid = a.attrelid
    left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
    where c.relnamespace = $1::regnamespace and a.attnum > 0 and not a.attisdropped
    union all
    select 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
    from pg_constraint where connamespace = $1::regnamespace
    union all
    select 'index ' || pg_get_indexdef(i.indexrelid)
    from pg_index i join pg_class c on c.oid = i.indexrelid where c.relnamespace = $1::regnamespace
    union all
    select 'trigger ' || pg_get_triggerdef(t.oid)
    from pg_trigger t join pg_class c on c.oid = t.tgrelid
    where c.relnamespace = $1::regnamespace and not t.tgisinternal
    union all
    select 'function ' || p.proname || ' ' || md5(p.prosrc)
    from pg_proc p where p.pronamespace = $1::regnamespace
) objects (x)`, name).Scan(&fp)
	return fp.String, err
}
