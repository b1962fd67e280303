package replicate_test

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
)

// BenchmarkEnqueue measures one job per Enqueue, from 8 goroutines, on a
// file that is not replicated, one replicated to a directory, and one
// whose every enqueue waits for the replica (Sync). The figures are in
// docs/replication.md.
func BenchmarkEnqueue(b *testing.B) {
	for _, mode := range []string{"not replicated", "replicated", "replicated, each enqueue waiting for the replica"} {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "q.db")
			q, err := lite.Open(b.Context(), path, lite.Options{ExternalCheckpoints: mode != "not replicated"})
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			var r *replicate.Replicator
			if mode != "not replicated" {
				if r, err = replicate.Start(path, "file://"+b.TempDir(), replicate.Options{Logger: fast.Logger}); err != nil {
					b.Fatal(err)
				}
				defer r.Close()
			}
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
