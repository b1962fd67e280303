package lite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
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
			drain(b, q, c)
		})
	}
}

// BenchmarkWorkerComposite drains b.N jobs at concurrency 256, every one
// in a batch of up to 1000 whose callback goes to a queue nobody serves,
// and half of them waiting for one of the other half, whose ack unblocks
// it: the cost of the triggers that count ends, against plain jobs.
func BenchmarkWorkerComposite(b *testing.B) {
	job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
	b.Run("plain/concurrency-256", func(b *testing.B) {
		q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
		for left := b.N; left > 0; left -= 1000 {
			if _, err := q.EnqueueBatch(b.Context(), slices.Repeat([]lite.NewJob{job}, min(left, 1000))); err != nil {
				b.Fatal(err)
			}
		}
		drain(b, q, 256)
	})
	b.Run("batch-and-dependency/concurrency-256", func(b *testing.B) {
		q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
		for left := b.N; left > 0; left -= 1000 {
			steps := make([]lite.Step, min(left, 1000))
			for i := range steps {
				steps[i] = lite.Step{Name: strconv.Itoa(i), Job: job}
				if half := len(steps) / 2; i >= half && i-half < half {
					steps[i].After = []string{strconv.Itoa(i - half)}
				}
			}
			wf := lite.Workflow{Steps: steps, Batch: &lite.Callback{Queue: "reports", Kind: "report"}}
			if _, err := q.EnqueueWorkflow(b.Context(), wf); err != nil {
				b.Fatal(err)
			}
		}
		drain(b, q, 256)
	})
}

// BenchmarkWorkerSteps drains b.N prefilled jobs at concurrency 256,
// each a handler of ten RunStep calls whose fn does nothing: what
// recording steps costs a job, against BenchmarkWorkerNoop's plain jobs
// (lite bench --durable gives the ratio).
func BenchmarkWorkerSteps(b *testing.B) {
	q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
	job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
	for left := b.N; left > 0; left -= 1000 {
		if _, err := q.EnqueueBatch(b.Context(), slices.Repeat([]lite.NewJob{job}, min(left, 1000))); err != nil {
			b.Fatal(err)
		}
	}
	names := make([]string, 10)
	for i := range names {
		names[i] = "step " + strconv.Itoa(i)
	}
	drainWith(b, q, 256, func(ctx context.Context, _ *lite.Job) error {
		for _, name := range names {
			if _, err := lite.RunStep(ctx, name, func(context.Context) (int, error) { return 1, nil }); err != nil {
				return err
			}
		}
		return nil
	})
}

// drain runs a Worker of concurrency c until b.N jobs of kind noop are
// done (callbacks are not counted), timing that alone.
func drain(b *testing.B, q *lite.Queue, c int) {
	drainWith(b, q, c, func(context.Context, *lite.Job) error { return nil })
}

// drainWith is drain with h as the handler.
func drainWith(b *testing.B, q *lite.Queue, c int, h lite.Handler) {
	var done atomic.Int64
	all := make(chan struct{})
	w, err := lite.NewWorker(q, lite.WorkerOptions{Concurrency: c, OnEvent: func(ev lite.Event) {
		if ev.Kind == lite.EventDone && ev.Job.Kind == "noop" && done.Add(1) == int64(b.N) {
			close(all)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle(lite.AnyKind, h)
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
