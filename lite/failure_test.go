package lite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestDiskFull(t *testing.T) {
	is := is.New(t)
	q := mustOpenOpts(t, filepath.Join(t.TempDir(), "full.db"), lite.Options{})
	ctx := t.Context()
	var kept []int64
	for range 5 {
		kept = append(kept, mustEnqueue(t, q, lite.NewJob{Payload: []byte("committed before the disk filled")}))
	}
	var pages int
	is.NoErr(lite.WriterDB(q).QueryRowContext(ctx, `pragma page_count`).Scan(&pages))
	_, err := lite.WriterDB(q).ExecContext(ctx, `pragma max_page_count = `+strconv.Itoa(pages+2))
	is.NoErr(err)

	big := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; err == nil; i++ {
		if i > 100 {
			t.Fatal("the file never filled")
		}
		_, err = q.Enqueue(ctx, lite.NewJob{Payload: big})
	}
	is.True(errors.Is(err, lite.ErrFull)) // typed
	is.True(strings.Contains(err.Error(), "full"))
	_, err = q.EnqueueBatch(ctx, []lite.NewJob{{Payload: big}, {Payload: big}})
	is.True(errors.Is(err, lite.ErrFull))
	for _, id := range kept {
		is.Equal(string(mustGet(t, q, id).Payload), "committed before the disk filled")
	}

	_, err = lite.WriterDB(q).ExecContext(ctx, `pragma max_page_count = 1073741823`) // room is made
	is.NoErr(err)
	id := mustEnqueue(t, q, lite.NewJob{Payload: big})
	is.Equal(len(mustGet(t, q, id).Payload), len(big))
}

// holdWriteLock takes the file's write lock from another connection until
// the returned release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		tx.Rollback()
		db.Close()
	}
}

func TestLockStorm(t *testing.T) {
	t.Run("a write lock held past the busy timeout is a typed, retryable error and writes nothing", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "locked.db")
		q := mustOpenOpts(t, path, lite.Options{BusyTimeout: 50 * time.Millisecond})
		release := holdWriteLock(t, path)
		_, err := q.Enqueue(t.Context(), lite.NewJob{})
		is.True(errors.Is(err, lite.ErrBusy))
		_, err = q.Lease(t.Context(), lite.LeaseRequest{})
		is.True(errors.Is(err, lite.ErrBusy))
		release()
		is.Equal(countJobs(t, q), 0)     // the refused enqueue left nothing
		mustEnqueue(t, q, lite.NewJob{}) // and the retry works
		is.Equal(countJobs(t, q), 1)
	})

	t.Run("admin writes and Complete under a held lock are ErrBusy and change nothing", func(t *testing.T) {
		is := is.New(t)
		clock := newFakeClock()
		path := filepath.Join(t.TempDir(), "locked.db")
		q := mustOpenOpts(t, path, lite.Options{BusyTimeout: 50 * time.Millisecond, Now: clock.Now})
		ctx := t.Context()
		dead := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
		is.NoErr(q.AckFailed(ctx, mustLeaseOne(t, q, "q").Lease(), errors.New("no")))
		running := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		lease := mustLeaseOne(t, q, "q").Lease()
		waiting := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		clock.Advance(time.Hour)
		before := map[int64]*lite.Job{}
		for _, id := range []int64{dead, running, waiting} {
			before[id] = mustGet(t, q, id)
		}

		release := holdWriteLock(t, path)
		_, err := q.Purge(ctx, clock.Now())
		is.True(errors.Is(err, lite.ErrBusy))
		is.True(errors.Is(q.Cancel(ctx, waiting), lite.ErrBusy))
		is.True(errors.Is(q.Retry(ctx, dead), lite.ErrBusy))
		_, err = q.ReleaseUnowned(ctx, running)
		is.True(errors.Is(err, lite.ErrBusy))
		is.True(errors.Is(q.Complete(ctx, lease, nil, func(*sql.Tx) error { return nil }), lite.ErrBusy))
		release()
		for id, j := range before {
			is.Equal(mustGet(t, q, id), j)
		}
	})

	t.Run("a worker blocked by another process's lock recovers by itself and fails nothing", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "locked.db")
		q := mustOpenOpts(t, path, lite.Options{BusyTimeout: 20 * time.Millisecond})
		id := mustEnqueue(t, q, lite.NewJob{})
		release := holdWriteLock(t, path)
		w, ev, logs := testWorker(t, q, lite.WorkerOptions{PollInterval: 5 * time.Millisecond})
		w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
		runWorker(t, w)
		deadline := time.Now().Add(guard)
		for !strings.Contains(logs.String(), "lease failed") { // blocked, and said so
			if time.Now().After(deadline) {
				t.Fatal("the worker never hit the lock")
			}
			time.Sleep(5 * time.Millisecond)
		}
		release()
		ev.await(t, lite.EventDone)
		j := mustGet(t, q, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(j.Attempts, 1) // the lock cost no attempt
		is.Equal(len(j.Errors), 0)
	})
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	info, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return info.Size()
}

func TestWALGrowthIsBoundedOnceAPinnedReaderLetsGo(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "wal.db")
	const limit = 256 << 10
	q := mustOpenOpts(t, path, lite.Options{Synchronous: lite.SyncNormal, WALSizeLimit: limit})
	ctx := t.Context()
	write := func(batches int) {
		for range batches {
			if _, err := q.EnqueueBatch(ctx, slices.Repeat([]lite.NewJob{{Payload: make([]byte, 2048)}}, 200)); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(1)

	// Another connection pins a snapshot: no checkpoint can reset the WAL.
	reader, err := sql.Open("sqlite", "file:"+path)
	is.NoErr(err)
	defer reader.Close()
	pinned, err := reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	is.NoErr(err)
	var n int
	is.NoErr(pinned.QueryRow(`select count(*) from lite_jobs`).Scan(&n))
	write(8) // about 7 MiB
	grown := walSize(t, path)
	is.True(grown > 4<<20) // why: the pinned snapshot kept the WAL from resetting

	is.NoErr(pinned.Rollback())
	write(3) // the first commit checkpoints, the next resets the WAL and cuts the file back to the limit
	var pageSize, autoCheckpoint int64
	is.NoErr(q.DB().QueryRowContext(ctx, `pragma page_size`).Scan(&pageSize))
	is.NoErr(q.DB().QueryRowContext(ctx, `pragma wal_autocheckpoint`).Scan(&autoCheckpoint))
	// The documented bound: the larger of the limit and the auto-checkpoint
	// threshold, plus the transaction in flight (a batch here, 200 x 2 KiB).
	bound := max(int64(limit), pageSize*autoCheckpoint) + 1<<20
	is.True(walSize(t, path) <= bound)
	is.True(walSize(t, path) < grown)
	t.Logf("WAL %d bytes with the reader pinned, %d after it let go", grown, walSize(t, path))
}
