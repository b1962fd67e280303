package replicate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
	"github.com/matryer/is"
)

// fast ships every 20ms, so that the tests wait for little, and logs
// only Litestream's warnings.
var fast = replicate.Options{
	SyncInterval: 20 * time.Millisecond,
	Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
}

func open(t *testing.T, path string) *lite.Queue {
	t.Helper()
	q, err := lite.Open(t.Context(), path, lite.Options{ExternalCheckpoints: true})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// replicateAndLose enqueues jobs on a replicated file, leases one, makes
// sure the replica has it all, then loses the file and its WAL. It
// returns the running lease and the highest id.
func replicateAndLose(t *testing.T, url string) (string, lite.Lease, int64) {
	t.Helper()
	is := is.New(t)
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "q.db")
	q := open(t, path)
	r, err := replicate.Start(path, url, fast)
	is.NoErr(err)
	var high int64
	for range 5 {
		high, err = q.Enqueue(ctx, lite.NewJob{Kind: "k", Payload: []byte("{}")})
		is.NoErr(err)
	}
	leases, err := q.Lease(ctx, lite.LeaseRequest{})
	is.NoErr(err)
	is.Equal(len(leases), 1)
	is.NoErr(r.Sync(ctx)) // on the replica before it returns
	is.NoErr(r.Close())
	is.NoErr(q.Close())
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
	return path, leases[0].Lease(), high
}

func TestAReplicaRestoresFenced(t *testing.T) {
	t.Run("a file lost with its WAL comes back from a replica directory with every job, its running job available, and ids and generations above the lost ones", func(t *testing.T) {
		restoresFenced(t, "file://"+t.TempDir())
	})
	t.Run("a restore to a time before the first commit finds nothing", func(t *testing.T) {
		is := is.New(t)
		url := "file://" + t.TempDir()
		path, _, _ := replicateAndLose(t, url)
		_, err := replicate.Restore(t.Context(), url, path, replicate.RestoreOptions{Timestamp: time.Now().Add(-time.Hour)})
		is.True(err != nil)
		_, err = os.Stat(path)
		is.True(errors.Is(err, os.ErrNotExist)) // nothing put in its place
	})
}

// restoresFenced replicates a file to url and loses it, restores it from
// url, and checks the restored file: the lost lease is lost, and the next
// lease and id are above the lost file's.
func restoresFenced(t *testing.T, url string) {
	t.Helper()
	is := is.New(t)
	ctx := t.Context()
	path, lost, high := replicateAndLose(t, url)
	rep, err := replicate.Restore(ctx, url, path, replicate.RestoreOptions{})
	is.NoErr(err)
	is.Equal(rep.Requeued, int64(1))
	q := open(t, path)
	defer q.Close()
	is.True(errors.Is(q.AckDone(ctx, lost, nil), lite.ErrLeaseLost))
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Max: 10})
	is.NoErr(err)
	is.Equal(len(jobs), 5) // every job, the running one available again
	for _, j := range jobs {
		is.True(j.Generation > lost.Generation+1<<40)
	}
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: "k", Payload: []byte("{}")})
	is.NoErr(err)
	is.True(id > high+1<<40)
}

func TestOneProcessReplicatesAtATime(t *testing.T) {
	t.Run("a second replicator of a file stands by, and takes over once the first stops", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "q.db")
		q := open(t, path)
		defer q.Close()
		url := "file://" + t.TempDir()
		first, err := replicate.Start(path, url, fast)
		is.NoErr(err)
		second, err := replicate.Start(path, url, fast)
		is.NoErr(err)
		defer second.Close()
		is.NoErr(first.Sync(ctx))
		is.NoErr(second.Sync(ctx)) // it asks the first
		is.NoErr(first.Close())
		_, err = q.Enqueue(ctx, lite.NewJob{Kind: "k", Payload: []byte("{}")})
		is.NoErr(err)
		is.NoErr(second.Sync(ctx)) // through the takeover
		is.Equal(restoredUnfinished(t, url), int64(1))
	})
}

func TestStartRefusesWhatItCannotReplicateTo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	for _, url := range []string{"s3://bucket/lite", "file://host/dir", "sftp://host/dir", "sftp://ada@host/dir", "postgres://x", "::"} {
		t.Run("it refuses "+url, func(t *testing.T) {
			is := is.New(t)
			_, err := replicate.Start(path, url, fast)
			is.True(err != nil)
		})
	}
	t.Run("it refuses a PostgreSQL queue", func(t *testing.T) {
		is := is.New(t)
		_, err := replicate.Start("postgres://ada@db/app", "file://"+t.TempDir(), fast)
		is.True(err != nil)
	})
	t.Run("an error never shows the URL's password", func(t *testing.T) {
		is := is.New(t)
		_, err := replicate.Start(path, "sftp://ada:s3cret@host/dir", fast)
		is.True(err != nil)
		is.True(!strings.Contains(err.Error(), "s3cret"))
	})
}

func TestSyncReturnsOnceTheCommitIsOnTheReplica(t *testing.T) {
	for _, c := range []struct {
		callers int
		standby bool
	}{{1, false}, {8, false}, {8, true}} {
		who := "the replicating process"
		if c.standby {
			who = "a process that stands by"
		}
		t.Run(fmt.Sprintf("with %d callers at once in %s, a copy of the replica taken as Sync returns restores every job enqueued before it", c.callers, who), func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "q.db")
			q := open(t, path)
			defer q.Close()
			dir := t.TempDir()
			slow := fast
			slow.SyncInterval = time.Hour // only Sync ships
			r, err := replicate.Start(path, "file://"+dir, slow)
			is.NoErr(err)
			defer r.Close()
			if c.standby {
				r, err = replicate.Start(path, "file://"+dir, slow)
				is.NoErr(err)
				defer r.Close()
			}
			var wg sync.WaitGroup
			for range c.callers {
				wg.Go(func() {
					_, err := q.Enqueue(ctx, lite.NewJob{Payload: []byte("{}")})
					is.NoErr(err)
					is.NoErr(r.Sync(ctx))
				})
			}
			wg.Wait()
			copied := t.TempDir()
			is.NoErr(os.CopyFS(copied, os.DirFS(dir)))
			is.Equal(restoredUnfinished(t, "file://"+copied), int64(c.callers))
		})
	}
}

// restoredUnfinished restores the replica at url to a new file and
// counts its unfinished jobs.
func restoredUnfinished(t *testing.T, url string) int64 {
	t.Helper()
	n, err := restored(t, url).Unfinished(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// restored is the replica at url restored to a new file.
func restored(t *testing.T, url string) *lite.Queue {
	t.Helper()
	path := filepath.Join(t.TempDir(), "r.db")
	if _, err := replicate.Restore(t.Context(), url, path, replicate.RestoreOptions{}); err != nil {
		t.Fatal(err)
	}
	q := open(t, path)
	t.Cleanup(func() { q.Close() })
	return q
}

func TestAfterCommitSyncWaitsForTheReplica(t *testing.T) {
	t.Run("with AfterCommit set to Sync, jobs are on the replica as Enqueue returns, and done on it as the worker reports them", func(t *testing.T) {
		is := is.New(t)
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "q.db")
		dir := t.TempDir()
		slow := fast
		slow.SyncInterval = time.Hour                        // only Sync ships
		r, err := replicate.Start(path, "file://"+dir, slow) // before the file exists: Sync goes into the queue's options
		is.NoErr(err)
		defer r.Close()
		q, err := lite.Open(ctx, path, lite.Options{ExternalCheckpoints: true, AfterCommit: r.Sync})
		is.NoErr(err)
		defer q.Close()
		for range 3 {
			_, err := q.Enqueue(ctx, lite.NewJob{Payload: []byte("{}")})
			is.NoErr(err)
		}
		copied := t.TempDir()
		is.NoErr(os.CopyFS(copied, os.DirFS(dir)))
		is.Equal(restoredUnfinished(t, "file://"+copied), int64(3))

		var mu sync.Mutex
		copies := make(map[int64]string) // a job's id: the replica copied as its ack was reported
		w, err := lite.NewWorker(q, lite.WorkerOptions{StopWhenIdle: true, OnEvent: func(ev lite.Event) {
			if ev.Kind == lite.EventDone {
				copied := t.TempDir()
				is.NoErr(os.CopyFS(copied, os.DirFS(dir)))
				mu.Lock()
				copies[ev.JobID] = copied
				mu.Unlock()
			}
		}})
		is.NoErr(err)
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		is.NoErr(w.Run(ctx))
		is.Equal(len(copies), 3)
		for id, copied := range copies {
			j, err := restored(t, "file://"+copied).Get(ctx, id)
			is.NoErr(err)
			is.Equal(j.State, lite.StateDone) // on the replica as its ack was reported
		}
	})
}
