package lite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"path/filepath"
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
	is.NoErr(q.DB().QueryRowContext(ctx, `pragma page_count`).Scan(&pages))
	_, err := q.DB().ExecContext(ctx, `pragma max_page_count = `+strconv.Itoa(pages+2))
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

	_, err = q.DB().ExecContext(ctx, `pragma max_page_count = 1073741823`) // room is made
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
