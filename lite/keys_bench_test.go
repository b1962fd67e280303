package lite_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/liteq/lite/lite"
)

// BenchmarkWorkerLimits drains b.N prefilled jobs with a no-op handler at
// concurrency 64 under a queue's MaxRunning of 32, and under a
// MaxRunningPerKey of 2 over 16 keys (so also at most 32 running): the
// per-key limit's cost in the lease against the queue limit's. Keys come
// interleaved (one job of each in turn) or in blocks (each key's jobs
// together, the walk's worst case: it passes a key's backlog to reach
// the next key). Compare jobs/s within a run.
func BenchmarkWorkerLimits(b *testing.B) {
	const keys = 16
	for _, c := range []struct {
		name   string
		limits lite.Limits
		key    func(i, n int) string
	}{
		{"queue-limit", lite.Limits{MaxRunning: 2 * keys}, func(int, int) string { return "" }},
		{"per-key-interleaved", lite.Limits{MaxRunningPerKey: 2}, func(i, _ int) string { return fmt.Sprint(i % keys) }},
		{"per-key-blocks", lite.Limits{MaxRunningPerKey: 2}, func(i, n int) string { return fmt.Sprint(i * keys / n) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
			if err := q.SetLimits(b.Context(), "q", c.limits); err != nil {
				b.Fatal(err)
			}
			jobs := make([]lite.NewJob, 0, 1000)
			for i := range b.N {
				jobs = append(jobs, lite.NewJob{Queue: "q", Kind: "noop", Payload: []byte("{}"), Key: c.key(i, b.N)})
				if len(jobs) == cap(jobs) || i == b.N-1 {
					if _, err := q.EnqueueBatch(b.Context(), jobs); err != nil {
						b.Fatal(err)
					}
					jobs = jobs[:0]
				}
			}
			drain(b, q, 64)
		})
	}
}
