package lite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Each engine has its own migrations, with the same versions and names:
// migration N makes the same change on both.
//
//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations, named NNNN_name.sql, in
// version order.
func loadMigrations(e engine) ([]migration, error) {
	dir := path.Join("migrations", e.String())
	entries, err := fs.ReadDir(migrationFiles, dir)
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, entry := range entries {
		base := strings.TrimSuffix(entry.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", entry.Name())
		}
		body, err := migrationFiles.ReadFile(path.Join(dir, entry.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: version, name: name, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: versions must count up from 1 without gaps", m.version, m.name)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this lite creates and understands,
// the same on every engine.
func SchemaVersion() int {
	ms, err := loadMigrations(engineSQLite)
	if err != nil {
		return 0
	}
	return len(ms)
}

const createMigrationsSQL = `create table if not exists lite_migrations (
    version    integer primary key,
    name       text    not null,
    applied_at integer not null
) strict`

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaObject is one row of sqlite_schema.
type schemaObject struct{ typ, name, table, sql string }

func (o schemaObject) String() string { return o.typ + " " + o.name }

// liteObjectsSQL lists every object named like lite's: tables, views,
// indexes and triggers alike, since any of them can clash with lite's.
const liteObjectsSQL = `select type, name, tbl_name, coalesce(sql, '') from sqlite_schema
where name like 'lite\_%' escape '\' order by name`

func liteObjects(ctx context.Context, db queryer) ([]schemaObject, error) {
	rows, err := db.QueryContext(ctx, liteObjectsSQL)
	if err != nil {
		return nil, classify(err)
	}
	var objects []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.typ, &o.name, &o.table, &o.sql); err != nil {
			rows.Close()
			return nil, classify(err)
		}
		objects = append(objects, o)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, classify(err)
	}
	return objects, nil
}

// reference holds what lite's own migrations make: objects[v] is the
// lite-named part of sqlite_schema after migrations 1..v, taken from an
// in-memory database once per process. Deriving it keeps the check in
// step with every migration added later.
var reference struct {
	once    sync.Once
	objects [][]schemaObject
	err     error
}

func referenceSchema(ctx context.Context) ([][]schemaObject, error) {
	reference.once.Do(func() {
		reference.objects, reference.err = buildReference(context.WithoutCancel(ctx))
	})
	return reference.objects, reference.err
}

func buildReference(ctx context.Context) ([][]schemaObject, error) {
	ms, err := loadMigrations(engineSQLite)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(sqliteDriver, ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every connection to :memory: is its own database
	objects := [][]schemaObject{nil}
	for _, m := range ms {
		for _, stmt := range []string{createMigrationsSQL, m.sql} {
			if _, err := db.ExecContext(ctx, stmt); err != nil {
				return nil, fmt.Errorf("reference schema: migration %04d_%s: %w", m.version, m.name, err)
			}
		}
		v, err := liteObjects(ctx, db)
		if err != nil {
			return nil, fmt.Errorf("reference schema: %w", err)
		}
		objects = append(objects, v)
	}
	return objects, nil
}

// schemaVersion reads which of lite's migrations the file has: 0 for a
// file lite never touched. It refuses a file whose lite-named objects are
// not exactly those lite's migrations make at the version it records, so
// that a foreign or damaged file is refused before anything changes it.
// It only reads.
func schemaVersion(ctx context.Context, db queryer) (int, error) {
	objects, err := liteObjects(ctx, db)
	if err != nil {
		return 0, err
	}
	if len(objects) == 0 {
		return 0, nil
	}
	i := slices.IndexFunc(objects, func(o schemaObject) bool { return o.name == "lite_migrations" })
	if i < 0 || objects[i].typ != "table" {
		return 0, fmt.Errorf("%w: it has %s, which lite did not create", ErrNotLite, objects[0])
	}
	var version, count int
	if err := db.QueryRowContext(ctx, `select coalesce(max(version), 0), count(*) from lite_migrations`).
		Scan(&version, &count); err != nil {
		return 0, fmt.Errorf("%w: reading lite_migrations: %v", ErrNotLite, err)
	}
	if latest := SchemaVersion(); version > latest {
		return 0, fmt.Errorf("%w: the file is at version %d, this lite knows up to %d; upgrade lite",
			ErrSchemaTooNew, version, latest)
	}
	if version == 0 || count != version {
		return 0, fmt.Errorf("%w: lite_migrations lists %d migrations up to version %d", ErrNotLite, count, version)
	}
	ref, err := referenceSchema(ctx)
	if err != nil {
		return 0, err
	}
	if err := sameObjects(objects, ref[version]); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNotLite, err)
	}
	return version, nil
}

// sameObjects compares a file's lite-named objects with lite's (type,
// name, table and SQL text) and names the first difference.
func sameObjects(got, want []schemaObject) error {
	byName := func(list []schemaObject) map[string]schemaObject {
		m := make(map[string]schemaObject, len(list))
		for _, o := range list {
			m[o.name] = o
		}
		return m
	}
	have, lites := byName(got), byName(want)
	for _, o := range got {
		w, ok := lites[o.name]
		switch {
		case !ok || w.typ != o.typ:
			return fmt.Errorf("it has %s, which lite did not create", o)
		case w != o:
			return fmt.Errorf("its %s is not the one lite creates", o)
		}
	}
	for _, w := range want {
		if _, ok := have[w.name]; !ok {
			return fmt.Errorf("it lacks %s, which lite creates", w)
		}
	}
	return nil
}

// classify adds lite's sentinel to the SQLite errors callers act on: a
// file that is not a database, a write lock held too long, a full disk, a
// file lite may not write.
// Calling it again on its own result changes nothing, so a method may
// classify whatever error its statements returned.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrBusy) || errors.Is(err, ErrFull) || errors.Is(err, ErrReadOnly) {
		return err
	}
	if code, ok := sqlState(err); ok {
		return classifyServer(err, code)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff { // the primary code, without the extended bits
	case sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: the file is not a SQLite database", ErrNotLite)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return codeError{err, ErrBusy}
	case sqlite3.SQLITE_FULL:
		return codeError{err, ErrFull}
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM:
		return codeError{err, ErrReadOnly}
	}
	return err
}

// migrate applies the migrations the file lacks, each in its own BEGIN
// IMMEDIATE transaction, so processes opening one new file at once apply
// each exactly once. A file that is up to date is only read: opening it
// must not wait for, or fail on, another process's write lock.
func (q *Queue) migrate(ctx context.Context) error {
	version, err := schemaVersion(ctx, q.w)
	if err != nil {
		return err
	}
	ms, err := loadMigrations(engineSQLite)
	if err != nil {
		return err
	}
	if version == len(ms) {
		return nil
	}
	c, err := q.w.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	for _, m := range ms[version:] {
		if err := q.applyMigration(ctx, c, m); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, classify(err))
		}
	}
	return nil
}

// applyMigration begins IMMEDIATE explicitly, not through BeginTx, so that
// it holds the write lock before its first read even on a caller's *sql.DB
// whose transactions are deferred.
func (q *Queue) applyMigration(ctx context.Context, c *sql.Conn, m migration) (err error) {
	if _, err := c.ExecContext(ctx, "begin immediate"); err != nil {
		return classify(err)
	}
	defer func() {
		if err != nil {
			c.ExecContext(context.WithoutCancel(ctx), "rollback")
		}
	}()
	// Another process may have migrated between our check and our lock.
	version, err := schemaVersion(ctx, c)
	if err != nil {
		return err
	}
	if version >= m.version {
		_, err = c.ExecContext(ctx, "commit")
		return err
	}
	if _, err := c.ExecContext(ctx, createMigrationsSQL); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, m.sql); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `insert into lite_migrations (version, name, applied_at) values (?, ?, ?)`,
		m.version, m.name, q.nowMillis()); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "commit")
	return err
}
