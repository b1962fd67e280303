package lite_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAReadOnlyQueue(t *testing.T) {
	// A queue opened ReadOnly is a real read-only connection (SQLite's
	// mode=ro), which refuses writes even to root, as a read-only mount
	// does.
	readOnly := func(t *testing.T) (*lite.Queue, int64) {
		t.Helper()
		q, path := mustOpen(t, nil)
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		return mustOpenOpts(t, path, lite.Options{ReadOnly: true}), id
	}
	t.Run("reads its jobs", func(t *testing.T) {
		is := is.New(t)
		q, id := readOnly(t)
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})
	t.Run("refuses a write with ErrReadOnly", func(t *testing.T) {
		is := is.New(t)
		q, id := readOnly(t)
		err := q.Cancel(t.Context(), id)
		is.True(errors.Is(err, lite.ErrReadOnly))
	})
	for _, stopWhenIdle := range []bool{true, false} {
		t.Run("ends a worker's run with ErrReadOnly, not a retry for ever", func(t *testing.T) {
			is := is.New(t)
			q, id := readOnly(t)
			w, _, _ := testWorker(t, q, lite.WorkerOptions{StopWhenIdle: stopWhenIdle})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			done := make(chan error, 1)
			go func() { done <- w.Run(t.Context()) }()
			select {
			case err := <-done:
				is.True(errors.Is(err, lite.ErrReadOnly))
			case <-time.After(guard):
				t.Fatal("the worker went on retrying its lease on a read-only file")
			}
			is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
		})
	}
}
