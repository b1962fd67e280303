package lite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
)

// The latency benchmarks measure an idle worker: from the call to Enqueue
// to the start of the handler, one job at a time.

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	at := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
	b.ReportMetric(at(1), "max-ms")
	b.ReportMetric(0, "ns/op") // per-op time is meaningless here
}

// latencyWorker runs a worker whose handler sends the time from the
// payload's stamp to its start.
func latencyWorker(b *testing.B, q *lite.Queue) <-chan time.Duration {
	starts := make(chan time.Duration, 1024)
	w, err := lite.NewWorker(q, lite.WorkerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
		stamp, _ := strconv.ParseInt(string(job.Payload), 10, 64)
		starts <- time.Since(time.Unix(0, stamp))
		return nil
	})
	runUntilCleanup(b, w)
	return starts
}

// runUntilCleanup runs w until the benchmark's cleanup.
func runUntilCleanup(b *testing.B, w *lite.Worker) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

func latencyOptions(name string) lite.Options {
	if name == "normal" {
		return lite.Options{Synchronous: lite.SyncNormal}
	}
	return lite.Options{}
}

func BenchmarkLatencyInProcess(b *testing.B) {
	for _, sync := range []string{"normal", "full"} {
		b.Run(sync, func(b *testing.B) {
			q := mustOpenOpts(b, filepath.Join(b.TempDir(), "lat.db"), latencyOptions(sync))
			starts := latencyWorker(b, q)
			var lat []time.Duration
			for b.Loop() {
				stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
				if _, err := q.Enqueue(b.Context(), lite.NewJob{Payload: []byte(stamp)}); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, <-starts)
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkLatencyCrossProcess has a second process enqueue b.N jobs,
// paced so that the worker here is idle for each; the worker sees them
// only through its data_version poll.
func BenchmarkLatencyCrossProcess(b *testing.B) {
	for _, sync := range []string{"normal", "full"} {
		b.Run(sync, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "lat.db")
			q := mustOpenOpts(b, path, latencyOptions(sync))
			starts := latencyWorker(b, q)
			exe, err := os.Executable()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "LITE_TEST_PACED_ENQUEUER="+path, "LITE_TEST_PACED_N="+strconv.Itoa(b.N),
				"LITE_TEST_PACED_SYNC="+sync)
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, b.N)
			for i := range lat {
				lat[i] = <-starts
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			reportLatency(b, lat)
		})
	}
}

// pacedEnqueue is the second process of BenchmarkLatencyCrossProcess.
func pacedEnqueue(path string) error {
	n, err := strconv.Atoi(os.Getenv("LITE_TEST_PACED_N"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	q, err := lite.Open(ctx, path, latencyOptions(os.Getenv("LITE_TEST_PACED_SYNC")))
	if err != nil {
		return err
	}
	defer q.Close()
	for range n {
		stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
		if _, err := q.Enqueue(ctx, lite.NewJob{Payload: []byte(stamp)}); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond) // let the worker go idle again
	}
	return nil
}
