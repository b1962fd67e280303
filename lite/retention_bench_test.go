package lite_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
)

// fileSize is the size of a queue's file on disk once its WAL is
// checkpointed into it.
func fileSize(b *testing.B, q *lite.Queue, path string) int64 {
	b.Helper()
	if _, err := q.DB().ExecContext(b.Context(), "pragma wal_checkpoint(truncate)"); err != nil {
		b.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}

// BenchmarkCleanShrinksTheFile: 200k done jobs with 1 KiB payloads, past
// their retention, cleaned by one Clean. Run with -benchtime 1x: each
// iteration builds its own file. Reports the file's size before and after
// (after a checkpoint) and the longest delete transaction.
func BenchmarkCleanShrinksTheFile(b *testing.B) {
	const jobs = 200_000
	for range b.N {
		b.StopTimer()
		clock := newFakeClock()
		path := filepath.Join(b.TempDir(), "clean.db")
		q := mustOpenOpts(b, path, lite.Options{Now: clock.Now, Synchronous: lite.SyncNormal})
		finishMany(b, q, jobs, 1024)
		before := fileSize(b, q, path)
		clock.Advance(lite.DefaultRetainDone)
		b.StartTimer()
		rep, err := q.Clean(b.Context())
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if rep.Deleted != jobs {
			b.Fatalf("deleted %d of %d", rep.Deleted, jobs)
		}
		after := fileSize(b, q, path)
		b.ReportMetric(float64(before)/(1<<20), "MiB-before")
		b.ReportMetric(float64(after)/(1<<20), "MiB-after")
		b.ReportMetric(100*float64(after)/float64(before), "%-left")
		b.ReportMetric(float64(rep.LongestBatch.Microseconds())/1000, "ms-longest-batch")
		b.ReportMetric(float64(rep.Batches), "batches")
		q.Close()
	}
}

// BenchmarkWorkerWhileCleaning drains b.N jobs with a no-op handler from
// a file that also holds 50k finished jobs of 1 KiB past their retention:
// once alone, and once while a Clean deletes that backlog beside it (the
// run fails if the Clean finishes first, so the whole drain is measured
// against a cleaner at work). Throughput with it should stay at least 0.8
// of throughput without. Compare with benchstat over -count 6, at
// -benchtime 20000x.
func BenchmarkWorkerWhileCleaning(b *testing.B) {
	for _, arm := range []struct {
		name  string
		clean bool
	}{{"cleaner-off", false}, {"cleaner-on", true}} {
		b.Run(arm.name, func(b *testing.B) {
			var offset atomic.Int64 // the backlog finishes two days ago
			offset.Store(int64(-2 * lite.DefaultRetainDone))
			now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Now: now, Synchronous: lite.SyncNormal})
			finishMany(b, q, 50_000, 1024)
			offset.Store(0)
			job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
			for left := b.N; left > 0; left -= 1000 {
				if _, err := q.EnqueueBatch(b.Context(), slices.Repeat([]lite.NewJob{job}, min(left, 1000))); err != nil {
					b.Fatal(err)
				}
			}
			var done atomic.Int64
			all := make(chan struct{})
			w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 16, NoCleaning: true, OnEvent: func(ev lite.Event) {
				if ev.Kind == lite.EventDone && done.Add(1) == int64(b.N) {
					close(all)
				}
			}})
			if err != nil {
				b.Fatal(err)
			}
			w.Handle("noop", func(context.Context, *lite.Job) error { return nil })
			ctx, stop := context.WithCancel(b.Context())
			cleaned := make(chan error, 1)
			b.ResetTimer()
			if arm.clean {
				go func() {
					_, err := q.Clean(ctx)
					cleaned <- err
				}()
			}
			ran := make(chan error)
			go func() { ran <- w.Run(ctx) }()
			<-all
			b.StopTimer()
			if arm.clean {
				select {
				case err := <-cleaned:
					b.Fatalf("the cleaner finished before the worker (err %v): give it a larger backlog", err)
				default:
				}
			}
			stop()
			if err := <-ran; err != nil {
				b.Fatal(err)
			}
			if arm.clean {
				if err := <-cleaned; err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}
