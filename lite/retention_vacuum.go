package lite

import (
	"context"
	"fmt"
)

// VacuumReport is what Vacuum did.
type VacuumReport struct {
	// Before and After are the database's size in bytes: on SQLite the
	// file's pages (what the file holds once its WAL is checkpointed); on
	// PostgreSQL lite_jobs with its indexes and TOAST.
	Before, After int64
}

// VacuumOptions tunes Vacuum; the zero value is the safe default.
type VacuumOptions struct {
	// Force rewrites a SQLite file even while workers run on it (Workers
	// lists them). Their heartbeats wait for the rewrite, so one that
	// outlasts their StaleAfter lets their jobs be reclaimed and run
	// twice.
	Force bool
}

// Vacuum compacts the database. On SQLite it switches the file to
// auto_vacuum = INCREMENTAL, which a file made by a lite before retention
// lacks, and rewrites it (VACUUM): afterwards Clean gives deleted jobs'
// space back by itself. The rewrite needs free disk space of about the
// file's size, holds the write lock throughout (other processes' writes
// wait, and fail after their busy timeout), and is needed once per file.
// So it refuses, with ErrWorkersRunning and nothing changed, while any
// process's workers are live on the file, unless opts.Force.
//
// On PostgreSQL it runs VACUUM (ANALYZE) on lite_jobs: the server's
// autovacuum does the same by itself, so this only hurries it. VACUUM
// makes the space of deleted rows reusable rather than giving it back to
// the operating system; lite does not run VACUUM FULL, which would lock
// the table against every worker while it rewrites it.
func (q *Queue) Vacuum(ctx context.Context, opts VacuumOptions) (VacuumReport, error) {
	var (
		rep VacuumReport
		err error
	)
	if q.engine.onServer() {
		err = q.vacuumPostgres(ctx, &rep)
	} else {
		err = q.vacuumSQLite(ctx, opts, &rep)
	}
	if err != nil {
		return rep, fmt.Errorf("vacuum: %w", err)
	}
	return rep, nil
}

func (q *Queue) vacuumSQLite(ctx context.Context, opts VacuumOptions, rep *VacuumReport) error {
	if !opts.Force {
		workers, err := q.Workers(ctx)
		if err != nil {
			return err
		}
		if len(workers) > 0 {
			return fmt.Errorf("%w: %d live on the file would lose their leases during the rewrite; stop them first", ErrWorkersRunning, len(workers))
		}
	}
	var err error
	if rep.Before, err = q.sqliteSize(ctx); err != nil {
		return err
	}
	// The mode takes effect with the rewrite; both run on the writer, so
	// nothing of this process writes between them.
	for _, s := range []string{"pragma auto_vacuum = incremental", "vacuum"} {
		if _, err := q.w.ExecContext(ctx, s); err != nil {
			return classify(err)
		}
	}
	// The rewritten pages are in the WAL; a checkpoint puts them in the
	// file and cuts it to its new size, unless a reader holds an older
	// snapshot, in which case the next checkpoint does.
	if _, err := q.w.ExecContext(ctx, "pragma wal_checkpoint(truncate)"); err != nil {
		return classify(err)
	}
	rep.After, err = q.sqliteSize(ctx)
	return err
}

// sqliteSize is the file's size in pages, in bytes.
func (q *Queue) sqliteSize(ctx context.Context) (int64, error) {
	var size int64
	err := q.w.QueryRowContext(ctx,
		"select page_count * page_size from pragma_page_count(), pragma_page_size()").Scan(&size)
	return size, classify(err)
}

const postgresJobsSizeSQL = `select pg_total_relation_size('lite_jobs')`

func (q *Queue) vacuumPostgres(ctx context.Context, rep *VacuumReport) error {
	if err := q.w.QueryRowContext(ctx, postgresJobsSizeSQL).Scan(&rep.Before); err != nil {
		return classify(err)
	}
	if _, err := q.w.ExecContext(ctx, "vacuum (analyze) lite_jobs"); err != nil {
		return classify(err)
	}
	return classify(q.w.QueryRowContext(ctx, postgresJobsSizeSQL).Scan(&rep.After))
}
