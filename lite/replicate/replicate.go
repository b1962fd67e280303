// Package replicate ships a lite SQLite file off the box as it changes,
// with Litestream as a library, and restores it with lite's fencing. A
// program links Litestream only if it imports this package.
//
//	r, err := replicate.Start(path, "file:///mnt/nas/lite", replicate.Options{})
//	q, err := lite.Open(ctx, path, lite.Options{ExternalCheckpoints: true})
//	// ... work ...
//	r.Close() // ships the last commits; before q.Close
//	q.Close()
//
// With lite.Options{AfterCommit: r.Sync} as well, every enqueue, ack and
// admin's change of a job returns only once its commit is on the replica
// (lite.Options.AfterCommit lists them); after a transaction of your own
// that enqueued with EnqueueTx, call q.AfterCommit.
//
// Replicas go to a directory (file:///path, such as a NAS mount) or over
// SFTP (sftp://user@host:port/path?key=…&host-key=…). Restore puts the
// latest replica, or the one of a given time, at a path and fences it
// (lite.FenceRestore), so that no lease is handed out twice.
//
// Litestream must own the file's checkpoints: open the queue with
// Options.ExternalCheckpoints in every process that shares the file.
// Several processes may replicate one file: one of them does at a time
// (an exclusive lock beside the file), the others stand by and take over
// within a second of its exit, however it ended.
package replicate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/liteq/lite/lite"
)

// Options tune replication; the zero value of each field is its default.
type Options struct {
	// SyncInterval is how often new commits are shipped: the most a box
	// that dies loses, plus the ship's own time. Default 1s.
	SyncInterval time.Duration
	// WALSizeLimit is the queue's lite.Options.WALSizeLimit: past it,
	// Litestream forces a truncating checkpoint, so the WAL stays about
	// the size lite cuts it to without replication. Default
	// lite.DefaultWALSizeLimit.
	WALSizeLimit int64
	// Logger gets Litestream's log. Default slog.Default().
	Logger *slog.Logger
}

// standbyRetry is how often a standing-by replicator tries to take over.
const standbyRetry = time.Second

// pageSize is the page size of a file lite creates, from which
// WALSizeLimit is counted in pages.
const pageSize = 4096

// Replicator replicates one file while it runs.
type Replicator struct {
	path   string
	client litestream.ReplicaClient
	opts   Options
	stop   chan struct{}
	done   chan struct{}
	err    error // what the replication ended with, set before done closes
	// failedToStart says that err is what Start returned, for its caller
	// to report.
	failedToStart bool

	mu      sync.Mutex
	db      *litestream.DB // while this process replicates
	next    *round         // the sync the next callers of Sync wait for
	syncing bool           // a goroutine runs rounds
}

// round is one sync that callers of Sync share.
type round struct {
	done chan struct{}
	err  error // set before done closes
}

// Start replicates the SQLite file at path to the replica at url, in the
// background, until Close: at once if no other process replicates it,
// else as soon as that one stops. A url that lite cannot replicate to is
// refused at once.
func Start(path, url string, opts Options) (*Replicator, error) {
	if lite.IsServerURL(path) {
		return nil, errors.New("replicate: PostgreSQL replicates with its own tools (streaming replication, WAL archiving); --replicate is for a SQLite file")
	}
	client, err := newClient(url)
	if err != nil {
		return nil, fmt.Errorf("replicate: %w", err)
	}
	if err := writable(client, path); err != nil {
		return nil, fmt.Errorf("replicate to %s: %w", Redact(url), err)
	}
	if opts.SyncInterval <= 0 {
		opts.SyncInterval = litestream.DefaultSyncInterval
	}
	if opts.WALSizeLimit <= 0 {
		opts.WALSizeLimit = lite.DefaultWALSizeLimit
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	r := &Replicator{path: path, client: client, opts: opts, stop: make(chan struct{}), done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		defer close(r.done)
		r.err = r.run(started)
		if r.err != nil && !r.failedToStart {
			opts.Logger.Error("lite: replication stopped", "err", r.err)
		}
	}()
	if err := <-started; err != nil {
		<-r.done
		return nil, err
	}
	return r, nil
}

// lockPath is the file whose lock says which process replicates path.
func lockPath(path string) string { return path + "-litestream.lock" }

// run takes the lock, waiting while another process holds it, replicates
// until stop, and ships what is left. Its first attempt's outcome goes to
// started: an error, or nil once it replicates or stands by.
func (r *Replicator) run(started chan<- error) (err error) {
	defer func() {
		select {
		case started <- err:
			r.failedToStart = err != nil // Start returns it: no log line too
		default:
		}
	}()
	f, err := os.OpenFile(lockPath(r.path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close() // and with it the lock
	t := time.NewTicker(standbyRetry)
	defer t.Stop()
	for {
		ok, err := tryLock(f)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		select {
		case started <- nil:
		default:
		}
		select {
		case <-r.stop:
			return nil
		case <-t.C:
		}
	}
	store, err := r.open()
	if err != nil {
		return err
	}
	stopServing, err := r.serve()
	if err != nil {
		return errors.Join(err, store.Close(context.Background()))
	}
	select {
	case started <- nil:
	default:
	}
	<-r.stop
	r.mu.Lock()
	r.db = nil
	r.mu.Unlock()
	stopServing() // before the lock goes: the next replicator's file is its own
	// Store.Close syncs the WAL and ships it, retrying for up to its
	// shutdown timeout.
	return store.Close(context.Background())
}

// open starts Litestream on the file: it owns the checkpoints (PASSIVE
// ones past MinCheckpointPageN and each CheckpointInterval, a TRUNCATE
// one past WALSizeLimit), and ships each SyncInterval.
func (r *Replicator) open() (*litestream.Store, error) {
	db := litestream.NewDB(r.path)
	db.MonitorInterval = r.opts.SyncInterval
	db.TruncatePageN = int(max(r.opts.WALSizeLimit/pageSize, 1))
	db.BusyTimeout = lite.DefaultBusyTimeout
	replica := litestream.NewReplicaWithClient(db, r.client)
	replica.SyncInterval = r.opts.SyncInterval
	db.Replica = replica
	store := litestream.NewStore([]*litestream.DB{db}, litestream.CompactionLevels{
		{Level: 0},
		{Level: 1, Interval: 10 * time.Second},
	})
	store.Logger = r.opts.Logger
	db.SetLogger(r.opts.Logger)
	if err := store.Open(context.Background()); err != nil {
		return nil, fmt.Errorf("replicate %s: %w", r.path, err)
	}
	r.mu.Lock()
	r.db = db
	r.mu.Unlock()
	return store, nil
}

// Close stops replicating, once the commits so far are shipped (if this
// process replicates), and returns what replication ended with. Close it
// before the queue: Litestream's handles on the file must close first.
func (r *Replicator) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	return r.err
}
