package lite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"time"
)

// restoreShift sets the floor FenceRestore raises ids and generations to:
// the restore's time in unix milliseconds times 2^restoreShift. Between
// two restores at times T1 < T2 the floor rises by (T2-T1) * 2048, so
// what was issued after the first stays under the second's floor unless
// more than 2,048 ids (or one job's generations) were issued per
// millisecond, two million a second, on average since the first: far
// over what one file or server commits. 2^11 keeps ids under 2^53, exact
// in JavaScript and in JSON read as doubles, until the year 2109.
const restoreShift = 11

// FenceReport is what FenceRestore did.
type FenceReport struct {
	// Floor is what every id and generation issued from now on exceeds.
	Floor int64
	// Requeued is how many running jobs were made available again.
	Requeued int64
}

// fenceHighSQL reads the highest id or generation the restored copy has
// issued, by its rows and by its id sequence (which purged rows left
// behind).
var fenceHighSQL = stmt{
	sqlite: `select max(
    coalesce((select max(id) from lite_jobs), 0),
    coalesce((select max(generation) from lite_jobs), 0),
    coalesce((select seq from sqlite_sequence where name = 'lite_jobs'), 0))`,
	postgres: `select greatest(
    coalesce(max(id), 0), coalesce(max(generation), 0),
    coalesce(pg_sequence_last_value(pg_get_serial_sequence('lite_jobs', 'id')::regclass), 0))
from lite_jobs`,
}

// fenceRequeueSQL makes the copy's running jobs available again, as a
// release does: their workers belong to the lost timeline. It reads the
// same in both dialects.
const fenceRequeueSQL = `update lite_jobs set ` + releaseSet + ` where state = 'running'`

// fenceGenerationSQL raises every job's generation, finished ones too
// (a retry makes them available again), to the floor: the next lease of
// any job is above every lease the lost timeline handed out.
var fenceGenerationSQL = stmt{
	sqlite:   `update lite_jobs set generation = ?1 where generation < ?1`,
	postgres: `update lite_jobs set generation = $1 where generation < $1`,
}

// fenceIDSQL raises the id sequence to the floor: the next job's id is
// above every id the lost timeline handed out. SQLite's sequence is a row
// of sqlite_sequence, which has none for lite_jobs until its first
// insert (fenceIDRowSQL makes it).
var fenceIDSQL = stmt{
	sqlite:   `update sqlite_sequence set seq = ? where name = 'lite_jobs'`,
	postgres: `select setval(pg_get_serial_sequence('lite_jobs', 'id'), $1)`,
}

const fenceIDRowSQL = `insert into sqlite_sequence (name, seq)
select 'lite_jobs', 0 where not exists (select 1 from sqlite_sequence where name = 'lite_jobs')`

// FenceRestore keeps fencing across a restore: run it on a database
// restored from a copy by any means (Restore runs it for you; after a
// PostgreSQL point-in-time recovery, or a file copied back by hand, run
// it yourself) before any worker starts on it. A copy lags the database
// it was taken from, which went on to hand out ids and leases that the
// copy knows nothing of. FenceRestore raises every job's generation and
// the id sequence to a floor derived from the clock (Options.Now; on
// PostgreSQL the server's) that nothing issued before can have reached,
// so no (id, generation) pair and no id is ever handed out twice; and it
// makes the copy's running jobs available again, their attempt refunded.
//
// What users see: jobs that ran (or finished) after the copy run again
// (at least once, as after any crash), every running job's old lease is
// lost, and ids jump to about the floor (about 3.6e15 in 2026).
//
// It trusts the clock not to be behind an earlier restore's: if the copy
// already holds an id or generation at or above the floor, it returns
// ErrClockBehind and changes nothing. It is safe to run again, and with
// workers running (their leases are lost); on PostgreSQL it locks
// lite_jobs against writes while it runs.
func (q *Queue) FenceRestore(ctx context.Context) (FenceReport, error) {
	var rep FenceReport
	err := q.withTx(ctx, func(tx txConn) error {
		if q.engine == enginePostgres {
			// Nothing may lease or enqueue between the check and the
			// raise: a lease in between would take a low generation.
			if _, err := tx.ExecContext(ctx, `lock table lite_jobs in exclusive mode`); err != nil {
				return classify(err)
			}
		} else if _, err := tx.ExecContext(ctx, fenceIDRowSQL); err != nil {
			return classify(err)
		}
		var err error
		rep.Floor, err = restoreFloor(q.opts.Now())
		if err != nil {
			return err
		}
		var high int64
		if err := tx.QueryRowContext(ctx, q.sql(fenceHighSQL)).Scan(&high); err != nil {
			return classify(err)
		}
		if high >= rep.Floor {
			return fmt.Errorf("%w: the database holds id or generation %d, at or above this restore's floor %d", ErrClockBehind, high, rep.Floor)
		}
		res, err := tx.ExecContext(ctx, fenceRequeueSQL)
		if err == nil {
			rep.Requeued, err = res.RowsAffected()
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, q.sql(fenceGenerationSQL), rep.Floor)
		}
		if err == nil {
			_, err = tx.ExecContext(ctx, q.sql(fenceIDSQL), rep.Floor)
		}
		return classify(err)
	})
	if err != nil {
		return FenceReport{}, fmt.Errorf("fence restore: %w", err)
	}
	q.notify()
	return rep, nil
}

// restoreFloor is the floor of a restore at now.
func restoreFloor(now time.Time) (int64, error) {
	ms := now.UnixMilli()
	if ms <= 0 || ms > math.MaxInt64>>restoreShift {
		return 0, fmt.Errorf("%w: it reads %s, which gives no floor", ErrClockBehind, now.UTC().Format(time.RFC3339))
	}
	return ms << restoreShift, nil
}

// RestoreOptions tune Restore; the zero value is the safe default.
type RestoreOptions struct {
	// Options open the files Restore reads and writes; Now is the clock
	// the fencing floor is read from.
	Options Options
	// Force replaces a file on which workers are announced as live
	// (Workers lists them; they may have been killed moments ago). A file
	// that another process has open is refused all the same.
	Force bool
}

// errServerRestore says what restores a server.
var errServerRestore = fmt.Errorf("%w on PostgreSQL: restore with pg_restore or the server's point-in-time recovery, then run FenceRestore (lite restore --in-place)", errors.ErrUnsupported)

// Restore puts a copy of the lite database src (one Backup made) at path,
// fenced (see FenceRestore): src itself is only read. The copy is made
// and fenced under a temporary name beside path, then moved into place.
//
// A database already at path is replaced only if no process has it open:
// Restore opens it, and refuses with ErrWorkersRunning if workers are
// announced as live on it (unless opts.Force), and with ErrInUse if it
// is still open elsewhere once Restore closes it (its WAL outlives
// Restore's close). Stop every process on the file first; a process that
// opens it while Restore runs keeps the replaced file. A file at path
// that is not a lite database is refused, untouched.
func Restore(ctx context.Context, src, path string, opts RestoreOptions) (FenceReport, error) {
	rep, err := restore(ctx, src, path, opts)
	if err != nil {
		return rep, fmt.Errorf("restore %s to %s: %w", Redact(src), Redact(path), err)
	}
	return rep, nil
}

func restore(ctx context.Context, src, path string, opts RestoreOptions) (FenceReport, error) {
	if IsServerURL(src) || IsServerURL(path) {
		return FenceReport{}, errServerRestore
	}
	if err := errors.Join(checkPath(src), checkPath(path)); err != nil {
		return FenceReport{}, err
	}
	if same, err := sameFile(src, path); err != nil || same {
		return FenceReport{}, errors.Join(err, errors.New("the copy is the file it would replace"))
	}
	if err := checkIdle(ctx, path, opts); err != nil {
		return FenceReport{}, err
	}
	tmp, err := copyOf(ctx, src, path, opts.Options)
	if err != nil {
		return FenceReport{}, err
	}
	defer removeDatabase(tmp)
	// Open checks that the copy is a lite database, and migrates it if an
	// older lite made it.
	q, err := Open(ctx, tmp, opts.Options)
	if err != nil {
		return FenceReport{}, err
	}
	rep, err := q.FenceRestore(ctx)
	if err == nil {
		// The copy's workers ran on the file it was taken from, and would
		// show as live, and refuse the next restore, until they lapse.
		_, err = q.w.ExecContext(ctx, `delete from lite_workers`)
	}
	if err = errors.Join(err, q.Close()); err != nil {
		return FenceReport{}, err
	}
	return rep, install(tmp, path, true)
}

// copyOf copies the database src to a temporary name beside path, as
// Backup does, so that src is only read even if it is live.
func copyOf(ctx context.Context, src, path string, opts Options) (string, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	// SQLite would create a missing src.
	if info, err := os.Stat(src); err != nil {
		return "", err
	} else if !info.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", src)
	}
	return snapshot(ctx, src, opts, path)
}

// checkIdle refuses a database at path that is in use; nothing there is
// idle.
func checkIdle(ctx context.Context, path string, opts RestoreOptions) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	q, err := Open(ctx, path, opts.Options)
	if err != nil {
		return err
	}
	workers, err := q.Workers(ctx)
	if err = errors.Join(err, q.Close()); err != nil {
		return err
	}
	if len(workers) > 0 && !opts.Force {
		return fmt.Errorf("%w: %d live on the file would keep writing to the replaced one; stop them first", ErrWorkersRunning, len(workers))
	}
	// The last connection to close a file checkpoints and removes its
	// WAL: one still there is another process's.
	if _, err := os.Lstat(path + "-wal"); err == nil {
		return fmt.Errorf("%w: another process has it open; stop it first", ErrInUse)
	}
	return nil
}
