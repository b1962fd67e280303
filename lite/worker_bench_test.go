package lite_test

import (
	"context"
	"database/sql"
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
			drainNoop(b, q, c)
		})
	}
}

// drainNoop runs a Worker of concurrency c with a no-op handler until it
// has done b.N jobs, timing only that, and reports jobs/s.
func drainNoop(b *testing.B, q *lite.Queue, c int) {
	b.Helper()
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
	ran := make(chan struct{})
	b.ResetTimer()
	go func() { w.Run(ctx); close(ran) }()
	<-all
	b.StopTimer()
	stop()
	<-ran // before the queue closes, or the worker's last writes fail
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEnqueue adds jobs one per call and in batches of 100 and 1000,
// with NORMAL and FULL, beside the raw insert lite bench takes as its
// reference: one prepared autocommit insert per job into a minimal table
// with one partial index, with the same pragmas. Compare jobs/s within a
// run: the machine varies more between runs than the figures do.
func BenchmarkEnqueue(b *testing.B) {
	job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
	for _, mode := range []string{"NORMAL", "FULL"} {
		sync := map[string]lite.Synchronous{"NORMAL": lite.SyncNormal, "FULL": lite.SyncFull}[mode]
		opts := lite.Options{Synchronous: sync}
		b.Run(mode+"/raw-insert", func(b *testing.B) {
			db := openRawInsert(b, mode)
			ins, err := db.PrepareContext(b.Context(), `insert into jobs (state, payload) values ('available', ?)`)
			if err != nil {
				b.Fatal(err)
			}
			defer ins.Close()
			for b.Loop() {
				if _, err := ins.ExecContext(b.Context(), job.Payload); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run(mode+"/single", func(b *testing.B) {
			q := mustOpenOpts(b, filepath.Join(b.TempDir(), "e.db"), opts)
			for b.Loop() {
				if _, err := q.Enqueue(b.Context(), job); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		for _, size := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/batch-%d", mode, size), func(b *testing.B) {
				q := mustOpenOpts(b, filepath.Join(b.TempDir(), "e.db"), opts)
				jobs := slices.Repeat([]lite.NewJob{job}, size)
				for b.Loop() {
					if _, err := q.EnqueueBatch(b.Context(), jobs); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N*size)/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}

// openRawInsert opens the raw reference's table as lite bench does.
func openRawInsert(b *testing.B, mode string) *sql.DB {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "raw.db")+
		"?_pragma=journal_mode(WAL)&_synchronous="+mode+"&_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(b.Context(), `create table jobs (
    id integer primary key, state text not null, payload blob not null, result blob) strict;
create index jobs_available on jobs (id) where state = 'available';`); err != nil {
		b.Fatal(err)
	}
	return db
}
