package lite_test

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/liteq/lite/lite"
)

// BenchmarkEnqueueWorkflow enqueues workflows of 1000 steps, half of them
// waiting for one of the other half, all in one batch with a callback:
// what a workflow's enqueue costs per step.
func BenchmarkEnqueueWorkflow(b *testing.B) {
	q := mustOpenOpts(b, filepath.Join(b.TempDir(), "w.db"), lite.Options{Synchronous: lite.SyncNormal})
	job := lite.NewJob{Kind: "noop", Payload: []byte("{}")}
	for range b.N {
		steps := make([]lite.Step, 1000)
		for i := range steps {
			steps[i] = lite.Step{Name: strconv.Itoa(i), Job: job}
			if i >= 500 {
				steps[i].After = []string{strconv.Itoa(i - 500)}
			}
		}
		if _, err := q.EnqueueWorkflow(b.Context(), lite.Workflow{Steps: steps, Batch: &lite.Callback{Queue: "r", Kind: "r"}}); err != nil {
			b.Fatal(err)
		}
	}
}
