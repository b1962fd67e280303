package lite

import (
	"path/filepath"
	"testing"
)

// TestLeaseLeavesTheWriterAtItsLevel pins that a lease, which commits
// unsynced on a FULL file, hands the writer back at the file's level: an
// ack or enqueue after it must commit as the Options say.
func TestLeaseLeavesTheWriterAtItsLevel(t *testing.T) {
	for _, c := range []struct {
		sync Synchronous
		want int
	}{{SyncFull, 2}, {SyncNormal, 1}} {
		t.Run(c.sync.pragma(), func(t *testing.T) {
			q, err := Open(t.Context(), filepath.Join(t.TempDir(), "q.db"), Options{Synchronous: c.sync})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Close()
			if _, err := q.Enqueue(t.Context(), NewJob{Kind: "k"}); err != nil {
				t.Fatal(err)
			}
			jobs, err := q.Lease(t.Context(), LeaseRequest{})
			if err != nil || len(jobs) != 1 {
				t.Fatalf("lease: %v, %d jobs, want 1", err, len(jobs))
			}
			var level int
			if err := q.w.QueryRowContext(t.Context(), "pragma synchronous").Scan(&level); err != nil {
				t.Fatal(err)
			}
			if level != c.want {
				t.Errorf("synchronous after a lease = %d, want %d", level, c.want)
			}
		})
	}
}
