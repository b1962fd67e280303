package lite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the embedded migrations, named NNNN_name.sql, in
// version order.
func loadMigrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil || version <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
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

// SchemaVersion is the schema version this lite creates and understands.
func SchemaVersion() int {
	ms, err := loadMigrations()
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

// schemaVersion reads which of lite's migrations the file has: 0 for a
// file lite never touched. It only reads.
func schemaVersion(ctx context.Context, db queryer) (int, error) {
	rows, err := db.QueryContext(ctx,
		`select name from sqlite_schema where type = 'table' and name like 'lite\_%' escape '\'`)
	if err != nil {
		return 0, classify(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, classify(err)
		}
		tables = append(tables, name)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, classify(err)
	}
	if len(tables) == 0 {
		return 0, nil
	}
	if !contains(tables, "lite_migrations") {
		return 0, fmt.Errorf("%w: it has table %s, which lite did not create", ErrNotLite, tables[0])
	}
	var version int
	if err := db.QueryRowContext(ctx, `select coalesce(max(version), 0) from lite_migrations`).Scan(&version); err != nil {
		return 0, fmt.Errorf("%w: reading lite_migrations: %v", ErrNotLite, err)
	}
	if latest := SchemaVersion(); version > latest {
		return 0, fmt.Errorf("%w: the file is at version %d, this lite knows up to %d; upgrade lite",
			ErrSchemaTooNew, version, latest)
	}
	return version, nil
}

// classify adds lite's sentinel to the SQLite errors callers act on: a
// file that is not a database, a write lock held too long, a full disk.
func classify(err error) error {
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
	}
	return err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
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
	ms, err := loadMigrations()
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
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, err)
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
