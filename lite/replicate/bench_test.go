package replicate_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
)

// The modes the benchmarks compare: a file not replicated, one
// replicated to a directory, and one whose enqueues and acks wait for
// the replica (lite.Options.AfterCommit = Sync). The figures are in
// docs/replication.md.
const (
	notReplicated = "not replicated"
	replicated    = "replicated"
	waiting       = "replicated, waiting for the replica"
)

var modes = []string{notReplicated, replicated, waiting}

// openFor opens a queue at a new path, replicated to a new directory as
// mode says.
func openFor(b *testing.B, mode string) (*lite.Queue, *replicate.Replicator) {
	path := filepath.Join(b.TempDir(), "q.db")
	var r *replicate.Replicator
	opts := lite.Options{}
	if mode != notReplicated {
		var err error
		r, err = replicate.Start(path, "file://"+b.TempDir(), replicate.Options{Logger: fast.Logger})
		if err != nil {
			b.Fatal(err)
		}
		opts.ExternalCheckpoints = true
	}
	if mode == waiting {
		opts.AfterCommit = r.Sync
	}
	q, err := lite.Open(b.Context(), path, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { q.Close() })
	if r != nil {
		b.Cleanup(func() { r.Close() }) // before q.Close: cleanups run last first
	}
	return q, r
}

// BenchmarkWork measures a worker (8 slots, a handler that does nothing)
// finishing jobs enqueued before the timer starts (and shipped, on a
// replicated file).
func BenchmarkWork(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			q, r := openFor(b, mode)
			jobs := make([]lite.NewJob, b.N)
			for i := range jobs {
				jobs[i].Payload = []byte("{}")
			}
			if _, err := q.EnqueueBatch(b.Context(), jobs); err != nil {
				b.Fatal(err)
			}
			if r != nil {
				if err := r.Sync(b.Context()); err != nil { // the batch is not the work measured
					b.Fatal(err)
				}
			}
			w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 8, StopWhenIdle: true})
			if err != nil {
				b.Fatal(err)
			}
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			b.ResetTimer()
			if err := w.Run(b.Context()); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkEnqueue measures one job per Enqueue, from 8 goroutines.
func BenchmarkEnqueue(b *testing.B) {
	for _, mode := range modes {
		b.Run(mode, func(b *testing.B) {
			q, _ := openFor(b, mode)
			b.SetParallelism(8 / runtime.GOMAXPROCS(0))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := q.Enqueue(b.Context(), lite.NewJob{Payload: []byte("{}")}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkLag measures how far the replica lags under load (a worker of
// 8 slots finishing what an enqueuer adds one job at a time), shipping
// every 1s (the default) and every 50ms: each op copies the replica
// directory at a random moment, as a box that dies leaves it; the copy,
// restored, lacks the commits of the last lag-ms before it.
func BenchmarkLag(b *testing.B) {
	for _, every := range []time.Duration{time.Second, 50 * time.Millisecond} {
		b.Run("every "+every.String(), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "q.db")
			dir := b.TempDir()
			r, err := replicate.Start(path, "file://"+dir, replicate.Options{SyncInterval: every, Logger: fast.Logger})
			if err != nil {
				b.Fatal(err)
			}
			q, err := lite.Open(b.Context(), path, lite.Options{ExternalCheckpoints: true})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			defer r.Close() // first
			ctx, stop := context.WithCancel(b.Context())
			loaded := load(b, ctx, q)
			if err := r.Sync(ctx); err != nil { // the replica has a first state
				b.Fatal(err)
			}
			copies := make([]string, b.N)
			at := make([]time.Time, b.N)
			b.ResetTimer()
			for i := range b.N {
				time.Sleep(time.Duration(rand.Int64N(int64(every))) + every/2)
				// A ship under way renames the files it writes: a copy
				// that lost one is taken again.
				for err := errors.ErrUnsupported; err != nil; {
					copies[i] = b.TempDir()
					at[i] = time.Now()
					err = os.CopyFS(copies[i], os.DirFS(dir))
				}
			}
			b.StopTimer()
			stop()
			loaded()
			var lags []time.Duration
			for i, c := range copies {
				last, err := lastCommitIn(b, c)
				if err != nil {
					b.Logf("a copy does not restore: %v", err)
					continue
				}
				lags = append(lags, at[i].Sub(last))
			}
			slices.Sort(lags)
			if len(lags) > 0 {
				b.ReportMetric(float64(lags[len(lags)/2].Milliseconds()), "median-lag-ms")
				b.ReportMetric(float64(lags[len(lags)-1].Milliseconds()), "max-lag-ms")
			}
		})
	}
}

// load enqueues one job at a time while a worker of 8 slots finishes
// them, until ctx ends; the returned func waits for both to stop.
func load(b *testing.B, ctx context.Context, q *lite.Queue) (wait func()) {
	w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: 8})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
	var wg sync.WaitGroup
	wg.Go(func() { w.Run(ctx) })
	wg.Go(func() {
		for ctx.Err() == nil {
			q.Enqueue(ctx, lite.NewJob{Payload: []byte("{}")})
		}
	})
	return wg.Wait
}

// lastCommitIn restores the replica copied to dir and reads the time of
// the last commit it holds: a job's enqueue, lease, heartbeat or finish.
func lastCommitIn(b *testing.B, dir string) (time.Time, error) {
	path := filepath.Join(b.TempDir(), "r.db")
	if _, err := replicate.Restore(b.Context(), "file://"+dir, path, replicate.RestoreOptions{}); err != nil {
		return time.Time{}, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return time.Time{}, err
	}
	defer db.Close()
	var ms int64
	err = db.QueryRow(`select max(coalesce(max(created_at), 0), max(coalesce(leased_at, 0)), max(coalesce(heartbeat_at, 0)), max(coalesce(finished_at, 0))) from lite_jobs`).Scan(&ms)
	return time.UnixMilli(ms), err
}
