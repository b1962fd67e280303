package lite_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestARunningWorkerCleansByTheFilesRetention(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: lite.KeepForever}))
		f := makeFinishedJobs(t, q)
		clock.Advance(lite.DefaultRetainDead)

		w, err := lite.NewWorker(q, lite.WorkerOptions{CleanInterval: 10 * time.Millisecond,
			HeartbeatInterval: time.Hour, StaleAfter: 3 * time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		is.NoErr(err)
		w.Handle("nothing of these", func(context.Context, *lite.Job) error { return nil })
		stop := runWorker(t, w)
		deadline := time.Now().Add(guard)
		for exists(t, q, f.cancelled) || exists(t, q, f.dead) {
			if time.Now().After(deadline) {
				t.Fatal("the worker did not clean")
			}
			time.Sleep(5 * time.Millisecond)
		}
		stop()
		is.True(exists(t, q, f.done)) // kept forever, as the file says
		is.True(exists(t, q, f.available))
		is.True(exists(t, q, f.running))
	})
}

func TestNegativeCleanIntervalIsRefused(t *testing.T) {
	is := is.New(t)
	q, _ := mustOpen(t, nil)
	_, err := lite.NewWorker(q, lite.WorkerOptions{CleanInterval: -time.Second})
	is.True(err != nil)
}
