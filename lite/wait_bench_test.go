package lite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
)

// BenchmarkWaitRoundTrip measures a durable call, one at a time: from the
// call to Enqueue to Wait returning the done job, with a worker in this
// process. The waiter is on the worker's queue (woken by the ack in this
// process), or on a second queue on the same file, as another process
// would be (woken by the WAL watch).
func BenchmarkWaitRoundTrip(b *testing.B) {
	for _, sync := range []string{"normal", "full"} {
		for _, waiter := range []string{"same-queue", "other-queue"} {
			b.Run(sync+"/"+waiter, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "wait.db")
				q := mustOpenOpts(b, path, latencyOptions(sync))
				waits := q
				if waiter == "other-queue" {
					waits = mustOpenOpts(b, path, latencyOptions(sync))
				}
				echoWorker(b, q)
				var lat []time.Duration
				for b.Loop() {
					start := time.Now()
					id, err := q.Enqueue(b.Context(), lite.NewJob{Payload: []byte("ping")})
					if err != nil {
						b.Fatal(err)
					}
					j, err := waits.Wait(b.Context(), id)
					if err != nil || string(j.Result) != "ping" {
						b.Fatalf("wait: %v, %v", j, err)
					}
					lat = append(lat, time.Since(start))
				}
				reportLatency(b, lat)
			})
		}
	}
}

// echoWorker runs a worker whose handler's result is its payload.
func echoWorker(b *testing.B, q *lite.Queue) {
	w, err := lite.NewWorker(q, lite.WorkerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
		lite.SetResult(ctx, job.Payload)
		return nil
	})
	runUntilCleanup(b, w)
}
