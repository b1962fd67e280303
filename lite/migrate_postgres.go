package lite

import (
	"context"
	"database/sql"
	"fmt"
)

// migrationLock is the advisory lock every host takes to migrate, so that
// hosts starting at once apply each migration exactly once ("lite").
const migrationLock = 0x6c697465

const createMigrationsPostgresSQL = `create table if not exists lite_migrations (
    version    integer primary key,
    name       text    not null,
    applied_at bigint  not null
)`

// postgresSchemaVersion is the version the database's lite tables are at:
// 0 when it has none. lite tables without lite's record of migrations
// were made by something else, and are refused.
func postgresSchemaVersion(ctx context.Context, db queryer) (int, error) {
	var hasMigrations, hasJobs bool
	err := db.QueryRowContext(ctx, `select to_regclass('lite_migrations') is not null, to_regclass('lite_jobs') is not null`).
		Scan(&hasMigrations, &hasJobs)
	switch {
	case err != nil:
		return 0, classify(err)
	case !hasMigrations && hasJobs:
		return 0, fmt.Errorf("%w: it has a lite_jobs table that lite's migrations did not make", ErrNotLite)
	case !hasMigrations:
		return 0, nil
	}
	var version int
	if err := db.QueryRowContext(ctx, `select coalesce(max(version), 0) from lite_migrations`).Scan(&version); err != nil {
		return 0, classify(err)
	}
	return version, nil
}

// migratePostgres applies the migrations the database lacks, all in one
// transaction under an advisory lock: a host that finds the schema up to
// date only reads, and one that finds a newer schema changes nothing.
func (q *Queue) migratePostgres(ctx context.Context) error {
	ms, err := loadMigrations(enginePostgres)
	if err != nil {
		return err
	}
	version, err := postgresSchemaVersion(ctx, q.w)
	switch {
	case err != nil:
		return err
	case version > len(ms):
		return fmt.Errorf("%w: the database is at version %d, this lite knows %d", ErrSchemaTooNew, version, len(ms))
	case version == len(ms):
		return nil
	}
	// The lock is the session's, taken before the transaction begins: a
	// transaction that began before another host's migration committed
	// may not see its tables in the catalog even after waiting for it.
	c, err := q.w.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer c.Close()
	// A role's lock_timeout or statement_timeout must not fail a host
	// that waits its turn behind another's migration.
	if _, err := c.ExecContext(ctx, `set lock_timeout = 0; set statement_timeout = 0`); err != nil {
		return classify(err)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), `reset lock_timeout; reset statement_timeout`)
	if _, err := c.ExecContext(ctx, `select pg_advisory_lock($1)`, migrationLock); err != nil {
		return classify(err)
	}
	defer c.ExecContext(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, migrationLock)
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		return classify(err)
	}
	defer tx.Rollback()
	if err := q.applyPostgresMigrations(ctx, tx, ms); err != nil {
		return err
	}
	return classify(tx.Commit())
}

func (q *Queue) applyPostgresMigrations(ctx context.Context, tx *sql.Tx, ms []migration) error {
	// Another host may have migrated between our check and our lock.
	version, err := postgresSchemaVersion(ctx, tx)
	switch {
	case err != nil:
		return err
	case version > len(ms):
		return fmt.Errorf("%w: the database is at version %d, this lite knows %d", ErrSchemaTooNew, version, len(ms))
	}
	if _, err := tx.ExecContext(ctx, createMigrationsPostgresSQL); err != nil {
		return classify(err)
	}
	for _, m := range ms[version:] {
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, classify(err))
		}
		if _, err := tx.ExecContext(ctx, `insert into lite_migrations (version, name, applied_at) values ($1, $2, $3)`,
			m.version, m.name, q.nowMillis()); err != nil {
			return fmt.Errorf("migration %04d_%s: %w", m.version, m.name, classify(err))
		}
	}
	return nil
}
