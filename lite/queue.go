package lite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteDriver is the database/sql driver lite opens a file with, the one
// modernc.org/sqlite registers. It is a variable for the mutation check
// (.ci/mutation), whose test binary points it at a driver that alters
// lite's statements as a mutant of their text would: one binary then
// checks many mutants, with no compile for each.
var sqliteDriver = "sqlite"

// Synchronous is how hard a commit waits for the disk.
type Synchronous int

const (
	// SyncFull, the default, makes a committed enqueue or ack survive power
	// loss: every commit waits for fsync of the write-ahead log.
	SyncFull Synchronous = iota
	// SyncNormal makes commits survive a crash of the process but not of
	// the machine: the last commits before a power loss may roll back. It
	// is several times faster on slow disks.
	SyncNormal
)

func (s Synchronous) pragma() string {
	if s == SyncNormal {
		return "NORMAL"
	}
	return "FULL"
}

// Options configure a Queue. The zero value of each field is its default.
type Options struct {
	// Now is the one clock lite reads. Default time.Now; tests pass a fake.
	Now func() time.Time
	// Synchronous picks durability over speed. Default SyncFull.
	Synchronous Synchronous
	// BusyTimeout is how long a write waits for another process's write
	// lock before it fails. Default 10s. SQLite counts it in whole
	// milliseconds, in an int32: from 1ms to about 24 days.
	BusyTimeout time.Duration
	// MaxPayloadBytes caps payloads and results. Default 1 MiB.
	MaxPayloadBytes int
	// Readers is the size of the read connection pool Open makes. Default 4.
	Readers int
	// Identity is written to locked_by on every lease: diagnostics only,
	// never part of a guard. Default host:pid:random.
	Identity string
	// WALSizeLimit is the size the write-ahead log is cut back to after a
	// checkpoint resets it (journal_size_limit). While a reader holds an
	// old snapshot the WAL cannot reset and grows; lite's own reads never
	// stay open across calls. Default 64 MiB.
	WALSizeLimit int64
	// ExternalCheckpoints leaves checkpoints to another component that
	// owns them, as Litestream must (lite/replicate): lite's connections
	// never checkpoint on commit (wal_autocheckpoint = 0), so none resets
	// the WAL between two of its reads and costs the replica a snapshot.
	// The owner must checkpoint, or the WAL grows without bound.
	ExternalCheckpoints bool
	// AfterCommit, if set, makes the writes a caller waits on wait for
	// more than the disk: each calls it after its commit, and returns only
	// once it has. These are every enqueue (Enqueue, EnqueueBatch,
	// EnqueueWorkflow, RunScheduleNow), each outcome a Worker writes (once
	// per group commit of done-acks, not once per job), every owner write
	// made by hand (AckDone, AckDoneMany, Complete, AckFailed, Fail,
	// Release, Snooze, Report), every admin's change of jobs (Cancel,
	// Retry, ReleaseUnowned, Bulk, Purge: the last two once, after their
	// last batch) and FireSchedules called by hand. Each waits once for
	// its commit, and writes that commit while a call is under way share
	// the next one (see Queue.AfterCommit). lite/replicate's
	// Replicator.Sync, which returns once every commit before it is on the
	// replica, makes them wait for the replica. If it fails, the call
	// returns an error that is ErrAfterCommit: the write committed on this
	// file all the same.
	//
	// Leases, renewals and the progress they carry, reclaims, expiries
	// (CancelExpired), retention's Clean and a Worker's own schedule fires
	// never call it: they are the queue's own upkeep, which no caller
	// waits on, and a copy that lacks one leases, reclaims, cleans or
	// fires again after a restore (at least once, never under a reused
	// generation). Nor do EnqueueTx and EnqueueBatchTx, whose transaction
	// the caller commits: call Queue.AfterCommit once it has.
	AfterCommit func(ctx context.Context) error
	// Backoff is the delay before retrying a job whose attempt number
	// attempt (from 1) failed. Default: 1s doubling per attempt up to one
	// hour, with the upper half jittered.
	Backoff func(attempt int) time.Duration
	// EnqueueMiddleware wraps every enqueue, the first outermost: see
	// EnqueueMiddleware.
	EnqueueMiddleware []EnqueueMiddleware
	// ServerTxTimeout bounds, on a server, every transaction lite opens,
	// the ones that run your writes (Complete, CommitWithAck, Fail,
	// CommitWithFailure, Retry, EnqueueWorkflow, RunStepTx) among them: the server
	// ends one that sits idle between statements longer than this (a
	// process frozen inside it), and cancels a statement in one that runs
	// or waits for a lock longer than this, so that no process holds the
	// rows it locked for longer. The transaction then rolls back, and its
	// call returns an error. A change of settings (Pause, SetLimits,
	// Declare) waits one second more for the leases under way. Default 2s;
	// at least 1ms. A SQLite file ignores it (BusyTimeout bounds the wait
	// for its write lock).
	ServerTxTimeout time.Duration
	// ReadOnly opens an existing file for reading alone (SQLite's
	// mode=ro): for a file in a read-only directory or mount, or one the
	// process may not write. Nothing is created, switched to WAL or
	// migrated (a file whose schema is behind this lite's is refused, with
	// ErrReadOnly), and every write fails with ErrReadOnly. A WAL file in
	// a read-only directory reads only if its -wal is absent (a clean
	// close removes it) or its -shm is there too. Ignored on a server.
	ReadOnly bool
	// immutable is set by a ReadOnly open that could read the file only
	// as SQLite's immutable=1.
	immutable bool
}

// Defaults applied by Options when a field is zero.
const (
	DefaultBusyTimeout     = 10 * time.Second
	DefaultMaxPayloadBytes = 1 << 20
	DefaultReaders         = 4
	DefaultWALSizeLimit    = 64 << 20
	DefaultServerTxTimeout = 2 * time.Second
)

func (o Options) withDefaults() (Options, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Synchronous != SyncFull && o.Synchronous != SyncNormal {
		return o, fmt.Errorf("options: unknown Synchronous %d", o.Synchronous)
	}
	// SQLite would read a timeout under a millisecond, or over an int32 of
	// them, as 0: no waiting at all.
	switch {
	case o.BusyTimeout < 0:
		return o, fmt.Errorf("options: negative BusyTimeout %s", o.BusyTimeout)
	case o.BusyTimeout == 0:
		o.BusyTimeout = DefaultBusyTimeout
	case o.BusyTimeout < time.Millisecond:
		return o, fmt.Errorf("options: BusyTimeout %s is under SQLite's resolution of 1ms", o.BusyTimeout)
	case o.BusyTimeout.Milliseconds() > math.MaxInt32:
		return o, fmt.Errorf("options: BusyTimeout %s is over SQLite's limit of %s",
			o.BusyTimeout, time.Duration(math.MaxInt32)*time.Millisecond)
	}
	switch {
	case o.MaxPayloadBytes < 0:
		return o, fmt.Errorf("options: negative MaxPayloadBytes %d", o.MaxPayloadBytes)
	case o.MaxPayloadBytes == 0:
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	switch {
	case o.Readers < 0:
		return o, fmt.Errorf("options: negative Readers %d", o.Readers)
	case o.Readers == 0:
		o.Readers = DefaultReaders
	}
	switch {
	case o.WALSizeLimit < 0:
		return o, fmt.Errorf("options: negative WALSizeLimit %d", o.WALSizeLimit)
	case o.WALSizeLimit == 0:
		o.WALSizeLimit = DefaultWALSizeLimit
	}
	switch {
	case o.ServerTxTimeout < 0:
		return o, fmt.Errorf("options: negative ServerTxTimeout %s", o.ServerTxTimeout)
	case o.ServerTxTimeout == 0:
		o.ServerTxTimeout = DefaultServerTxTimeout
	case o.ServerTxTimeout < time.Millisecond:
		return o, fmt.Errorf("options: ServerTxTimeout %s is under the server's resolution of 1ms", o.ServerTxTimeout)
	}
	if o.Identity == "" {
		o.Identity = DefaultIdentity()
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	return o, nil
}

// DefaultIdentity is host:pid:random, unique per call.
func DefaultIdentity() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), uuid.NewString()[:8])
}

// Queue is a job queue in one SQLite file, or in a PostgreSQL database
// (see Open). It is safe for concurrent use.
type Queue struct {
	engine engine
	server Server // the server's driver, on a server engine
	dsn    string // the server's URL, on a server engine
	opts   Options
	path   string  // the database file; empty for an in-memory database
	w      *sql.DB // the one writer connection
	r      *sql.DB // readers; the same as w when the caller owns the *sql.DB
	app    *sql.DB // what DB returns: the caller's own; lite never uses it
	owned  bool
	stmts  stmtCache
	rounds *rounds // the writer's rounds, on a file; nil on a server
	wakeup wakeup
	sched  wakeup    // schedules changed in this process
	obs    observers // see ObserveEvents
	closed sync.Once

	afterBatch func()      // tests: called after each delete batch of Clean and Purge commits
	finished   wakeup      // jobs may have finished, or been deleted
	waiters    waitWatch   // the watch of other processes' commits for Wait
	noting     atomic.Bool // a notification of finished jobs is on its way
	notes      sync.WaitGroup

	waitMu      sync.Mutex
	waits       [][2]int64 // ms: the long waits for the lock this process saw, merged, oldest first (noteWait)
	commitWaits afterCommits
}

// Open opens the queue in the SQLite file at path, creating it (mode 0600)
// if it does not exist, and brings its schema up to date. A file that is not
// a SQLite database, whose lite-named tables, views, indexes or triggers are
// not the ones lite's migrations made, or that a newer lite migrated is
// refused untouched. path is a file path: ":memory:", "" and "file:" URIs
// are refused, since the queue's connections must share one file. A new
// file appears at path only once it is a whole lite database: processes
// opening one new path at once all find the same database, and a failed
// Open leaves nothing behind.
//
// path may instead be a PostgreSQL URL (postgres://user@host/db?…) when
// the program imports lite/pg: the queue then lives in lite_ tables of that
// database, shared by workers on many hosts, with the same API, and times
// come from the server's clock (see Options.Now). Errors print the URL
// without its password.
func Open(ctx context.Context, path string, opts Options) (*Queue, error) {
	open := open
	if IsServerURL(path) {
		open = openServer
	}
	q, err := open(ctx, path, opts)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", Redact(path), err)
	}
	return q, nil
}

func open(ctx context.Context, path string, opts Options) (*Queue, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkPath(path); err != nil {
		return nil, err
	}
	// Past this point Open writes (a new file, migrations): a cancel must
	// not cut it off half-way, where an error would not say what was done.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	if opts.ReadOnly {
		return openReadOnly(ctx, path, opts)
	}
	if err := createIfMissing(ctx, path, opts); err != nil {
		return nil, err
	}
	w, err := sql.Open(sqliteDriver, dsn(path, opts, false))
	if err != nil {
		return nil, err
	}
	// One writer per process: writes queue in Go, not in SQLite's busy
	// handler, and a transaction never waits on its own process.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	// Check the file before the first write: switching to WAL rewrites the
	// header, and a foreign file must stay as it was.
	if _, err := schemaVersion(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	if err := autoVacuumIfEmpty(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	// On a file already in WAL mode this only reads the header: it needs no
	// write lock, so opening for a read works while another process writes.
	var mode string
	if err := w.QueryRowContext(ctx, "pragma journal_mode = wal").Scan(&mode); err != nil {
		w.Close()
		return nil, fmt.Errorf("journal mode: %w", classify(err))
	}
	if mode != "wal" {
		w.Close()
		return nil, fmt.Errorf("journal mode: got %q, want wal", mode)
	}
	r, err := sql.Open(sqliteDriver, dsn(path, opts, true))
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(opts.Readers)
	r.SetMaxIdleConns(opts.Readers)
	// The caller's transactions get connections of their own, so that one
	// held open never takes the writer from lite's heartbeats and acks, and
	// a write that waits for lite's lock fails after the busy timeout
	// instead of waiting forever in the pool. Opening makes no connection.
	app, err := sql.Open(sqliteDriver, dsn(path, opts, false))
	if err != nil {
		w.Close()
		r.Close()
		return nil, err
	}
	q := &Queue{opts: opts, path: path, w: w, r: r, app: app, owned: true, stmts: stmtCache{db: w}}
	q.rounds = newRounds(q)
	if err := q.migrate(ctx); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}

// openReadOnly opens path as Options.ReadOnly says: every pool reads
// through SQLite's mode=ro, and the file must be a lite database at this
// lite's schema already, since nothing may bring it there.
func openReadOnly(ctx context.Context, path string, opts Options) (*Queue, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, version, err := openReadOnlyDB(ctx, dsn(path, opts, true))
	var se *sqlite.Error
	if _, walErr := os.Stat(path + "-wal"); errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CANTOPEN &&
		errors.Is(walErr, fs.ErrNotExist) {
		// A WAL file whose -shm cannot be made (a read-only directory)
		// opens only as immutable: safe with no -wal, which holds
		// every commit a checkpoint has not copied, and which a writer
		// would need to make beside it.
		opts.immutable = true
		db, version, err = openReadOnlyDB(ctx, dsn(path, opts, true))
	}
	if err == nil && version != SchemaVersion() {
		err = fmt.Errorf("%w: the file's schema is at version %d and this lite's at %d: open it once where it may be written, to migrate it",
			ErrReadOnly, version, SchemaVersion())
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, err
	}
	db.SetMaxOpenConns(opts.Readers)
	db.SetMaxIdleConns(opts.Readers)
	q := &Queue{opts: opts, path: path, w: db, r: db, app: db, owned: true, stmts: stmtCache{db: db}}
	q.rounds = newRounds(q)
	return q, nil
}

// openReadOnlyDB opens a read-only pool on dsn and reads its schema
// version, the first read, which finds whether the file opens at all.
func openReadOnlyDB(ctx context.Context, dsn string) (*sql.DB, int, error) {
	db, err := sql.Open(sqliteDriver, dsn)
	if err != nil {
		return nil, 0, err
	}
	version, err := schemaVersion(ctx, db)
	if err != nil {
		db.Close()
		return nil, 0, err
	}
	return db, version, nil
}

// New makes a queue on the caller's *sql.DB, which must be a
// modernc.org/sqlite database, and brings its schema up to date. The caller
// keeps ownership: Close does not close db. For lite's guarantees the DSN
// should carry what Open sets: WAL journal mode, a busy timeout and
// _txlock=immediate; lite's own transactions write first, so even a
// deferred transaction never fails half-way.
func New(ctx context.Context, db *sql.DB, opts Options) (*Queue, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("new queue: %w", err)
	}
	q := &Queue{opts: opts, w: db, r: db, app: db, stmts: stmtCache{db: db}}
	q.rounds = newRounds(q)
	if err := q.migrate(ctx); err != nil {
		q.stmts.close()
		return nil, fmt.Errorf("new queue: %w", err)
	}
	if err := db.QueryRowContext(ctx, `select file from pragma_database_list where name = 'main'`).Scan(&q.path); err != nil {
		q.stmts.close()
		return nil, fmt.Errorf("new queue: %w", classify(err))
	}
	return q, nil
}

// DB is a pool of connections to the queue's file for your own tables:
// begin a transaction on it to write your rows and enqueue with EnqueueTx
// in the same commit. Its transactions begin IMMEDIATE, as lite's do. Its
// connections are not lite's writer: while one of your transactions holds
// the file's write lock, lite's writes (and a call such as Enqueue rather
// than EnqueueTx inside that transaction) wait for it up to the busy
// timeout, then fail with ErrBusy. For a queue made by New it is the
// caller's own *sql.DB.
func (q *Queue) DB() *sql.DB { return q.app }

// Close releases the queue's statements and, if Open made them, its
// connections. Calls after Close fail.
func (q *Queue) Close() error {
	var err error
	q.closed.Do(func() {
		if q.rounds != nil {
			q.rounds.stop()
		}
		q.notes.Wait()
		q.stmts.close()
		if q.owned {
			err = errors.Join(q.app.Close(), q.r.Close(), q.w.Close())
		}
	})
	return err
}

func (q *Queue) nowMillis() int64 { return q.opts.Now().UnixMilli() }

// checkPath refuses names SQLite would not treat as a plain file: an
// in-memory database is private to one connection, so the writer and the
// readers would each see a different, empty queue.
func checkPath(path string) error {
	switch {
	case path == "":
		return errors.New("lite needs a file path, and it is empty")
	case path == ":memory:":
		return errors.New("lite needs a file path, not :memory:: an in-memory database cannot be shared by the queue's connections")
	case strings.HasPrefix(path, "file:"):
		return errors.New("lite needs a file path, not a URI: options go in Options")
	}
	return nil
}

// createIfMissing makes a new lite database at path if nothing is there.
// It builds it whole under a temporary name beside path, then links it into
// place only if path is still free: another process opening the same new
// path at once finds nothing or a whole database, never a file that a
// failed Open removes under it. The file has mode 0600 (SQLite would make
// it 0644); its -wal and -shm take the mode of the database.
func createIfMissing(ctx context.Context, path string, opts Options) error {
	if info, err := os.Lstat(path); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return errors.New("is a symbolic link to nothing") // SQLite would create its target
		}
	}
	info, err := os.Stat(path)
	switch {
	case err == nil && info.IsDir():
		return errors.New("is a directory")
	case !errors.Is(err, fs.ErrNotExist):
		return err // nil if a file is there: Open checks what it is
	}
	tmp := fmt.Sprintf("%s.new-%s", path, uuid.NewString()[:8])
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	defer removeDatabase(tmp) // after the link, only the temporary name goes
	if err := initialize(ctx, tmp, opts); err != nil {
		return err
	}
	err = linkFile(tmp, path)
	switch {
	case err == nil, errors.Is(err, fs.ErrExist):
		return nil // ours, or another process's that was first: both whole
	case errors.Is(err, errors.ErrUnsupported), errors.Is(err, fs.ErrPermission):
		// A file system without hard links (FAT, some network shares):
		// create in place. A failure from here on leaves an empty file,
		// which is an empty database that the next Open fills.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return f.Close()
	}
	return err
}

// linkFile is os.Link; tests replace it to take the path of a file system
// without hard links.
var linkFile = os.Link

// initialize puts a new file in incremental auto-vacuum and WAL mode with
// lite's schema, then closes it: the last connection's close checkpoints
// the WAL and removes it.
func initialize(ctx context.Context, path string, opts Options) error {
	db, err := sql.Open(sqliteDriver, dsn(path, opts, false))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	q := &Queue{opts: opts, w: db}
	// First of all: a file takes it only while nothing, not even the
	// switch to WAL, has written its first page. Clean then gives the
	// space of deleted jobs back to the file system.
	_, err = db.ExecContext(ctx, "pragma auto_vacuum = incremental")
	var mode string
	if err == nil {
		err = db.QueryRowContext(ctx, "pragma journal_mode = wal").Scan(&mode)
	}
	if err == nil && mode != "wal" {
		err = fmt.Errorf("journal mode: got %q, want wal", mode)
	}
	if err == nil {
		err = q.migrate(ctx)
	}
	return errors.Join(err, db.Close())
}

// autoVacuumIfEmpty gives a file that has no pages yet (one made by
// touch or mktemp, or left empty by the fallback of createIfMissing) the
// incremental auto-vacuum of a file lite creates, before the switch to
// WAL writes its first page; a file with pages keeps its mode, which only
// Vacuum can change.
func autoVacuumIfEmpty(ctx context.Context, w *sql.DB) error {
	var pages int64
	if err := w.QueryRowContext(ctx, "pragma page_count").Scan(&pages); err != nil {
		return fmt.Errorf("page count: %w", classify(err))
	}
	if pages > 0 {
		return nil
	}
	if _, err := w.ExecContext(ctx, "pragma auto_vacuum = incremental"); err != nil {
		return fmt.Errorf("auto vacuum: %w", classify(err))
	}
	return nil
}

// removeDatabase removes a database file and the files SQLite keeps
// beside it.
func removeDatabase(path string) {
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		os.Remove(path + suffix)
	}
}

// dsn builds a modernc.org/sqlite URI. Pragmas go in the DSN, not in Exec:
// only then does every pooled connection get them.
func dsn(path string, o Options, readOnly bool) string {
	v := url.Values{}
	v.Set("_busy_timeout", strconv.FormatInt(o.BusyTimeout.Milliseconds(), 10))
	v.Set("_foreign_keys", "1")
	v.Set("_synchronous", o.Synchronous.pragma())
	v.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", o.WALSizeLimit))
	if o.ExternalCheckpoints {
		v.Add("_pragma", "wal_autocheckpoint(0)")
	}
	if o.ReadOnly {
		v.Set("mode", "ro")
	}
	if o.immutable {
		v.Set("immutable", "1")
	}
	if readOnly {
		v.Set("_query_only", "1")
	} else {
		v.Set("_txlock", "immediate")
	}
	escaped := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return "file:" + escaped + "?" + v.Encode()
}

// withTx runs fn in one write transaction (BEGIN IMMEDIATE on a queue that
// Open made) and commits if fn returns nil. A cancel of ctx can stop a
// statement inside fn, which then rolls the transaction back, but never
// the commit: once it starts, its outcome is the call's. On a server the
// transaction is bounded (see txBounds, Options.ServerTxTimeout), and
// ctx's deadline bounds each statement.
func (q *Queue) withTx(ctx context.Context, fn func(tx txConn) error) error {
	return q.withTxBounded(ctx, q.txBounds(), fn)
}

// withTxBounded is withTx with bounds b on a server.
func (q *Queue) withTxBounded(ctx context.Context, b txBounds, fn func(tx txConn) error) error {
	txCtx, err := uncancelled(ctx)
	if err != nil {
		return err
	}
	tx, err := q.w.BeginTx(txCtx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer q.stmts.prepareMissed(txCtx) // after the rollback below: the writer is free
	defer tx.Rollback()
	c := txConn{tx: tx, stmts: &q.stmts}
	byDeadline := false
	if q.engine.onServer() {
		if byDeadline, err = q.boundServerTx(ctx, c, b); err != nil {
			return pastDeadline(ctx, byDeadline, err)
		}
	}
	if err := fn(c); err != nil {
		return pastDeadline(ctx, byDeadline, err)
	}
	if err := tx.Commit(); errors.Is(err, sql.ErrTxDone) {
		return fmt.Errorf("commit: the transaction was committed or rolled back inside it, so whether its writes landed is unknown: %w", err)
	} else if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// write runs fn, one write whose statement is query, so that the time fn
// reads from the clock comes after the write's lock is held (nowOn: its
// round's one reading). On a file that is a round of the writer's (see rounds): a
// transaction on the writer, begun IMMEDIATE, shared with the other writes
// waiting, each of them fenced and answered on its own. A write that
// waited for another process's lock (an app's transaction, a long purge)
// longer than a lease's stale-after must not store the time from before
// the wait, or its lease would commit lapsed. On a server it is the one
// statement, its clock read just before it: none of these takes a lock
// that lite holds on a table, so it waits at most for a row that another
// transaction is changing (a job's own ack in an app's transaction), and
// then reads the row as that transaction left it (its time older by that
// wait).
func (q *Queue) write(ctx context.Context, query string, fn func(c conn) error) error {
	return q.writeIn(ctx, query, false, fn)
}

// writeIn is write, for a lease when unsynced is set: a round of leases
// alone may commit without a sync (see leaseWithoutSync).
func (q *Queue) writeIn(ctx context.Context, query string, unsynced bool, fn func(c conn) error) error {
	return q.writeItem(query, &roundItem{ctx: ctx, fn: fn, unsynced: unsynced})
}

// writeItem is write for it, a write as a round takes it (see roundItem).
func (q *Queue) writeItem(query string, it *roundItem) error {
	ctx := it.ctx
	if q.engine.onServer() {
		// Refused before it runs, with the reason, inside ack writes.
		if _, err := uncancelled(ctx); err != nil {
			return err
		}
		asked := q.nowMillis()
		defer func() { q.noteWait(asked, q.nowMillis()) }()
		if _, ok := ctx.Deadline(); ok {
			// Its own transaction, so that the server cancels it at the
			// deadline (see boundServerTx): the writer's statements run
			// to their end, a lock wait behind an app's transaction too.
			return q.withTxBounded(ctx, txBounds{idle: q.opts.ServerTxTimeout}, func(tx txConn) error { return it.fn(tx) })
		}
		return it.fn(q.writer())
	}
	if err := q.prepareForTx(ctx, query); err != nil {
		return err
	}
	it.written, _ = ctx.Value(writtenKey{}).(func())
	if err := q.rounds.do(it); !errors.Is(err, errRoundsStopped) {
		return err
	}
	asked := q.nowMillis()
	defer func() { q.noteWait(asked, q.nowMillis()) }() // a write that failed for want of the lock waited too
	return q.roundTx(ctx, it.unsynced && q.leaseWithoutSync(), func(tx txConn) error {
		q.noteWait(asked, q.nowMillis())
		return it.run(tx)
	})
}

// writeTx is write for fn that needs the transaction itself (the caller's
// writes of Complete and Fail): on a server, a transaction of its own.
func (q *Queue) writeTx(ctx context.Context, query string, fn func(tx txConn) error) error {
	if q.engine.onServer() {
		if err := q.prepareForTx(ctx, query); err != nil {
			return err
		}
		return q.withTx(ctx, fn)
	}
	return q.write(ctx, query, func(c conn) error {
		switch c := c.(type) {
		case roundConn:
			return fn(c.txConn)
		default:
			return fn(c.(txConn))
		}
	})
}

// AfterCommit waits for Options.AfterCommit, if set, as lite's own
// writes do once they committed: call it after committing a transaction
// of your own that holds EnqueueTx or EnqueueBatchTx calls, so that the
// jobs are as safe as Enqueue's when you go on (on the replica, with
// Replicator.Sync). Callers whose commits returned while a call was under
// way share the next one (see afterCommits): the writes that one round
// or group commit answered wait once, not once each. If the call fails
// it returns an error that is ErrAfterCommit; without the option, nil.
func (q *Queue) AfterCommit(ctx context.Context) error {
	if q.opts.AfterCommit == nil {
		return nil
	}
	if err := q.commitWaits.wait(ctx, q.opts.AfterCommit); err != nil {
		return codeError{fmt.Errorf("committed here, but the wait after its commit failed: %w", err), ErrAfterCommit}
	}
	return nil
}

// afterWrite is AfterCommit once op's write committed, for a caller's
// write (see Options.AfterCommit), its error naming op.
func (q *Queue) afterWrite(ctx context.Context, op string) error {
	if err := q.AfterCommit(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// afterCommits runs Options.AfterCommit one call at a time. A caller joins
// the call that starts next, never one already under way, which may have
// begun before the caller's commit and so not cover it.
type afterCommits struct {
	mu      sync.Mutex
	running bool
	next    *afterCommitCall
}

type afterCommitCall struct {
	ctx    context.Context // the first joiner's, uncancelled: the call is everyone's
	joined int             // callers waiting for it
	done   chan struct{}
	err    error
}

func (a *afterCommits) wait(ctx context.Context, fn func(context.Context) error) error {
	a.mu.Lock()
	if a.next == nil {
		a.next = &afterCommitCall{ctx: context.WithoutCancel(ctx), done: make(chan struct{})}
	}
	c := a.next
	c.joined++
	if !a.running {
		a.start(fn)
	}
	a.mu.Unlock()
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// start runs the next call, then the one joined meanwhile; a.mu is held.
func (a *afterCommits) start(fn func(context.Context) error) {
	c := a.next
	a.next, a.running = nil, true
	go func() {
		c.err = fn(c.ctx)
		close(c.done)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.next != nil {
			a.start(fn)
		} else {
			a.running = false
		}
	}()
}

// Waits that reclaim counts out of a job's silence (see noteWait).
const (
	// shortWait is the longest wait not kept: a heartbeat delayed so
	// little hides no silence, and on a busy file the many short waits of
	// its rounds, kept, would add up to spare a dead worker's jobs.
	shortWait = 50 * time.Millisecond
	// waitMemory is how long a wait is kept once it ended: far longer
	// than any stale-after a worker promises by default (30 s), so a
	// silence of a promise's length never reaches back past the waits
	// kept.
	waitMemory = time.Hour
	// maxWaits bounds the waits kept: past it the two oldest merge into
	// one, which counts the moment between them out too, so a job may be
	// taken later, never sooner.
	maxWaits = 256
)

// noteWait records that a write waited from from to to (ms), for the
// file's lock, or held it for a long transaction of this process, or,
// on a server, for its one statement (rows another transaction holds).
// Reclaim counts the time of every wait kept out of a job's silence:
// whoever held the lock, a heartbeat needing it waited as long. A wait
// of shortWait or less is not kept, and overlapping waits make one.
func (q *Queue) noteWait(from, to int64) {
	if to-from <= shortWait.Milliseconds() {
		return
	}
	q.waitMu.Lock()
	defer q.waitMu.Unlock()
	q.waits = mergeWait(q.waits, [2]int64{from, to}, to-waitMemory.Milliseconds())
}

// mergeWait adds w to waits (disjoint, oldest first), merging those it
// overlaps, drops the waits that ended before since, and keeps maxWaits
// at most.
func mergeWait(waits [][2]int64, w [2]int64, since int64) [][2]int64 {
	kept := waits[:0]
	for _, o := range waits {
		switch {
		case o[1] < since:
		case o[1] < w[0] || o[0] > w[1]:
			kept = append(kept, o)
		default:
			w = [2]int64{min(w[0], o[0]), max(w[1], o[1])}
		}
	}
	i, _ := slices.BinarySearchFunc(kept, w, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	kept = slices.Insert(kept, i, w)
	if len(kept) > maxWaits {
		kept[1][0] = kept[0][0]
		kept = kept[1:]
	}
	return kept
}

// waitsJSON is the waits noteWait kept, as a JSON array of [from, to]
// pairs, for reclaimSQL.
func (q *Queue) waitsJSON() string {
	q.waitMu.Lock()
	defer q.waitMu.Unlock()
	b, _ := json.Marshal(q.waits) // int pairs always marshal
	if q.waits == nil {
		return "[]"
	}
	return string(b)
}

// prepareForTx prepares query before a transaction on the writer holds
// it, which preparing would wait for, so that the transaction reuses the
// statement rather than parse it. Like every write, it is refused inside
// a handler's ack writes (see uncancelled).
func (q *Queue) prepareForTx(ctx context.Context, query string) error {
	ctx, err := uncancelled(ctx)
	if err != nil {
		return err
	}
	_, err = q.stmts.prepare(ctx, query)
	return err
}

// writeRowNow runs query, a write that returns one integer into dest, as
// write does: its first argument is the time, read once the lock is held,
// and args follow.
func (q *Queue) writeRowNow(ctx context.Context, query string, dest *int64, args ...any) error {
	return q.write(ctx, query, func(c conn) error {
		return c.QueryRowContext(ctx, query, append([]any{q.nowMillis()}, args...)...).Scan(dest)
	})
}
