package lite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/liteq/lite/lite"
)

// BenchmarkWorkerNoop drains b.N prefilled jobs with a no-op handler.
func BenchmarkWorkerNoop(b *testing.B) {
	for _, c := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("concurrency-%d", c), func(b *testing.B) {
			q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
			job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
			for left := b.N; left > 0; left -= 1000 {
				if _, err := q.EnqueueBatch(b.Context(), slices.Repeat([]lite.NewJob{job}, min(left, 1000))); err != nil {
					b.Fatal(err)
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: c, OnEvent: func(ev lite.Event) {
				if ev.Kind == lite.EventDone && done.Add(1) == int64(b.N) {
					close(all)
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			ctx, stop := context.WithCancel(b.Context())
			b.ResetTimer()
			go w.Run(ctx)
			<-all
			b.StopTimer()
			stop()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkEnqueue adds jobs one per call and in batches of 1000.
func BenchmarkEnqueue(b *testing.B) {
	job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
	b.Run("single", func(b *testing.B) {
		q := mustOpenOpts(b, filepath.Join(b.TempDir(), "e.db"), lite.Options{Synchronous: lite.SyncNormal})
		for b.Loop() {
			if _, err := q.Enqueue(b.Context(), job); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	})
	b.Run("batch-1000", func(b *testing.B) {
		q := mustOpenOpts(b, filepath.Join(b.TempDir(), "e.db"), lite.Options{Synchronous: lite.SyncNormal})
		jobs := slices.Repeat([]lite.NewJob{job}, 1000)
		for b.Loop() {
			if _, err := q.EnqueueBatch(b.Context(), jobs); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "jobs/s")
	})
}
