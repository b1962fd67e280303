package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
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
	err := q.withTx(ctx, func(tx txConn) (err error) {
		rep, err = fenceIn(ctx, tx, q.engine.onServer(), q.opts.Now())
		return err
	})
	if err != nil {
		return FenceReport{}, fmt.Errorf("fence restore: %w", err)
	}
	q.notify()
	return rep, nil
}

// fenceIn fences the database tx is a transaction of (see FenceRestore),
// on a server or on a file, with the floor read from now.
func fenceIn(ctx context.Context, tx conn, onServer bool, now time.Time) (FenceReport, error) {
	dialect := func(s stmt) string {
		if onServer {
			return s.postgres
		}
		return s.sqlite
	}
	var rep FenceReport
	if onServer {
		// Nothing may lease or enqueue between the check and the raise: a
		// lease in between would take a low generation.
		if _, err := tx.ExecContext(ctx, `lock table lite_jobs in exclusive mode`); err != nil {
			return rep, classify(err)
		}
	} else if _, err := tx.ExecContext(ctx, fenceIDRowSQL); err != nil {
		return rep, classify(err)
	}
	var err error
	rep.Floor, err = restoreFloor(now)
	if err != nil {
		return rep, err
	}
	var high int64
	if err := tx.QueryRowContext(ctx, dialect(fenceHighSQL)).Scan(&high); err != nil {
		return rep, classify(err)
	}
	if high >= rep.Floor {
		return rep, fmt.Errorf("%w: the database holds id or generation %d, at or above this restore's floor %d", ErrClockBehind, high, rep.Floor)
	}
	res, err := tx.ExecContext(ctx, fenceRequeueSQL)
	if err == nil {
		rep.Requeued, err = res.RowsAffected()
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, dialect(fenceGenerationSQL), rep.Floor)
	}
	if err == nil {
		_, err = tx.ExecContext(ctx, dialect(fenceIDSQL), rep.Floor)
	}
	return rep, classify(err)
}

// FenceInPlace fences the SQLite file at path as it lies (see
// FenceRestore), after a copy was put back by hand: lite restore
// --in-place. It holds the file's exclusive lock from the check that no
// process has it open to the end, as Restore's install does, so a worker
// starting meanwhile waits and then sees the file fenced, and never
// leases a job that the fence then makes available again beside it. It
// refuses, changing nothing, while another process has the file open
// (ErrInUse), while workers are announced live on it (ErrWorkersRunning,
// unless opts.Force: workers just killed), and while a -wal no process
// holds lies beside it (see CheckInPlace). An older lite's file is
// migrated first.
func FenceInPlace(ctx context.Context, path string, opts RestoreOptions) (FenceReport, error) {
	if IsServerURL(path) {
		return FenceReport{}, fmt.Errorf("fence %s: %w: on a server, open the queue and run FenceRestore", Redact(path), errors.ErrUnsupported)
	}
	if err := CheckInPlace(path); err != nil {
		return FenceReport{}, err
	}
	q, err := Open(ctx, path, opts.Options)
	if err != nil {
		return FenceReport{}, err
	}
	if err := q.Close(); err != nil {
		return FenceReport{}, err
	}
	o, err := opts.Options.withDefaults()
	if err != nil {
		return FenceReport{}, err
	}
	var rep FenceReport
	err = withFileLocked(ctx, path, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `begin immediate`); err != nil {
			return err
		}
		err := checkNoWorkers(ctx, c, opts)
		if err == nil {
			rep, err = fenceIn(ctx, c, false, o.Now())
		}
		if err != nil {
			c.ExecContext(ctx, `rollback`)
			return err
		}
		_, err = c.ExecContext(ctx, `commit`)
		return err
	})
	if err != nil {
		return FenceReport{}, fmt.Errorf("fence %s: %w", Redact(path), err)
	}
	return rep, nil
}

// errCannotTell is heldElsewhere's answer where the system cannot say
// whether another process holds a file's lock without taking one.
var errCannotTell = errors.New("cannot tell whether another process holds the file")

// CheckInPlace refuses to fence the SQLite file at path in place (lite
// restore --in-place, after a copy was put back by hand) while another
// process has it open (ErrInUse: its running jobs, made available, would
// start a second time while the first runs, whatever workers are
// announced), and while a -wal lies beside it that no process holds:
// killed processes left it, and if the file was copied back it belongs
// to the file replaced; opening the copy would replay it onto it, and
// ruin it for good. Call it before opening the file. On Windows it cannot
// tell, and refuses nothing.
func CheckInPlace(path string) error {
	if _, err := os.Lstat(path + "-wal"); err != nil {
		return nil // no process has a WAL database open without its -wal
	}
	held, err := heldElsewhere(path)
	if errors.Is(err, errCannotTell) {
		return nil
	}
	if err != nil {
		return err
	}
	if held {
		return fmt.Errorf("check %s: %w: another process has it open; stop it first, as a restore is fenced before any worker starts", Redact(path), ErrInUse)
	}
	return fmt.Errorf("check %s: %s-wal lies beside it, left by processes that were killed, and opening the file replays it: if you copied the file back by hand, the WAL belongs to the file you replaced: delete %[2]s-wal and %[2]s-shm; if you did not, open the file once (lite ls) to fold the WAL in; then run this again", Redact(path), Redact(path))
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
	return rep, installCopy(ctx, tmp, path, opts)
}

// installCopy puts the fenced copy tmp at path. A free path gets it by
// a link that fails if a file appeared there meanwhile; a stale -wal or
// -shm there belongs to a file gone before, and would be replayed onto
// the copy, so it goes first. A file at path gets the copy written into
// it (see installLocked), never renamed over it: a process that opened
// the old file would keep its -wal and -shm beside the new one, and
// replay them onto it.
func installCopy(ctx context.Context, tmp, path string, opts RestoreOptions) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			os.Remove(path + suffix)
		}
		if err := install(tmp, path, false); !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return installLocked(ctx, tmp, path, opts)
}

// installLockedBusy is how long installLocked waits for a process that
// holds the file for a moment (a lite ls) before it refuses.
const installLockedBusy = 2 * time.Second

// installLocked writes the copy tmp into the database at path with
// SQLite's backup API, holding the file's exclusive lock from the check
// that no process has it open to the end: locking_mode=EXCLUSIVE takes
// it at the first write and keeps it until the connection closes. Any
// process with the file open holds a shared lock, so the lock is refused
// (ErrInUse) while one does; one that opens it meanwhile waits for the
// lock and then reads the copy whole. The copy replaces every page, in
// a transaction: on an error the file is as it was. Closing checkpoints
// the WAL into the file and removes it.
func installLocked(ctx context.Context, tmp, path string, opts RestoreOptions) error {
	return withFileLocked(ctx, path, func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, `begin immediate`); err != nil {
			return err
		}
		if err := checkNoWorkers(ctx, c, opts); err != nil {
			c.ExecContext(ctx, `rollback`)
			return err
		}
		if _, err := c.ExecContext(ctx, `commit`); err != nil {
			return err
		}
		return copyInto(c, tmp)
	})
}

// withFileLocked runs fn on a connection to the SQLite file at path that
// holds the file's exclusive lock from its first statement until it
// closes (locking_mode=EXCLUSIVE): every process with the file open
// holds a shared lock, so the first statement is refused (ErrInUse,
// after installLockedBusy for one holding it for a moment) while one
// does, and a process that opens the file meanwhile waits for fn's end.
// Closing checkpoints the WAL into the file and removes it.
func withFileLocked(ctx context.Context, path string, fn func(c *sql.Conn) error) error {
	err := classify(lockedFile(ctx, path, fn))
	if errors.Is(err, ErrBusy) {
		return fmt.Errorf("%w: another process has it open; stop it first", ErrInUse)
	}
	return err
}

func lockedFile(ctx context.Context, path string, fn func(c *sql.Conn) error) (err error) {
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	db, err := sql.Open(sqliteDriver, "file:"+escaped+"?_pragma=locking_mode(EXCLUSIVE)&_pragma=synchronous(FULL)&_pragma=busy_timeout("+
		strconv.FormatInt(installLockedBusy.Milliseconds(), 10)+")")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

// copyInto writes the database tmp into the one c is connected to, page
// for page, with SQLite's backup API.
func copyInto(c *sql.Conn, tmp string) error {
	return c.Raw(func(dc any) error {
		r, ok := dc.(interface {
			NewRestore(string) (*sqlite.Backup, error)
		})
		if !ok {
			return errors.New("the SQLite driver has no backup API")
		}
		b, err := r.NewRestore("file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(tmp) + "?mode=ro")
		if err != nil {
			return err
		}
		_, err = b.Step(-1)
		return errors.Join(err, b.Finish())
	})
}

// checkNoWorkers refuses, unless opts.Force, a database with workers
// announced live on it: they would keep writing to what the copy
// replaced. A database that is not lite's is refused, untouched.
func checkNoWorkers(ctx context.Context, c *sql.Conn, opts RestoreOptions) error {
	o, err := opts.Options.withDefaults()
	if err != nil {
		return err
	}
	var live int
	err = c.QueryRowContext(ctx, `select count(*) from lite_workers where `+liveWorker.sqlite, o.Now().UnixMilli()).Scan(&live)
	switch {
	case err != nil && strings.Contains(err.Error(), "no such table"):
		return fmt.Errorf("%w: it has no lite_workers table", ErrNotLite)
	case err != nil:
		return classify(err)
	case live > 0 && !opts.Force:
		return fmt.Errorf("%w: %d live on the file would keep writing to the replaced one; stop them first", ErrWorkersRunning, live)
	}
	return nil
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
