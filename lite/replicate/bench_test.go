package replicate_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
)

// replicated opens a queue at a new path and, unless mode says it is not
// replicated, replicates it to a new directory.
func replicated(b *testing.B, mode string) (*lite.Queue, *replicate.Replicator) {
	path := filepath.Join(b.TempDir(), "q.db")
	q, err := lite.Open(b.Context(), path, lite.Options{ExternalCheckpoints: mode != "not replicated"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	if mode == "not replicated" {
		return q, nil
	}
	r, err := replicate.Start(path, "file://"+b.TempDir(), replicate.Options{Logger: fast.Logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() }) // before q.Close: cleanups run last first
	return q, r
}

// BenchmarkWork measures a worker (8 slots, a handler that does nothing)
// finishing jobs on a file replicated or not.
func BenchmarkWork(b *testing.B) {
	for _, mode := range []string{"not replicated", "replicated"} {
		b.Run(mode, func(b *testing.B) {
			q, _ := replicated(b, mode)
			jobs := make([]lite.NewJob, b.N)
			for i := range jobs {
				jobs[i].Payload = []byte("{}")
			}
			if _, err := q.EnqueueBatch(b.Context(), jobs); err != nil {
				b.Fatal(err)
			}
			w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 8})
			if err != nil {
				b.Fatal(err)
			}
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			ctx, stop := context.WithCancel(b.Context())
			defer stop()
			go func() {
				for n := int64(1); n > 0; time.Sleep(5 * time.Millisecond) {
					n, _ = q.Unfinished(ctx, nil)
				}
				stop()
			}()
			b.ResetTimer()
			if err := w.Run(ctx); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkEnqueue measures one job per Enqueue, from 8 goroutines, on a
// file that is not replicated, one replicated to a directory, and one
// whose every enqueue waits for the replica (Sync). The figures are in
// docs/replication.md.
func BenchmarkEnqueue(b *testing.B) {
	for _, mode := range []string{"not replicated", "replicated", "replicated, each enqueue waiting for the replica"} {
		b.Run(mode, func(b *testing.B) {
			q, r := replicated(b, mode)
			wait := r != nil && mode != "replicated"
			b.SetParallelism(8 / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := q.Enqueue(b.Context(), lite.NewJob{Payload: []byte("{}")}); err != nil {
						b.Error(err)
						return
					}
					if wait {
						if err := r.Sync(b.Context()); err != nil {
							b.Error(err)
							return
						}
					}
				}
			})
		})
	}
}
