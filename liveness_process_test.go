package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestARunningJobIsNotReclaimedWhileAnotherProcessHoldsTheLock runs a job
// in a worker process, with another worker process beside it, while a
// third process enqueues a large workflow whose steps all wait for the
// running job: that enqueue holds the file (on PostgreSQL, the job's
// row) for longer than the job's stale-after. The job is not reclaimed:
// it runs once, under its first generation. The attacker saw it run twice
// in 3 of 6 runs on PostgreSQL and 7 of 15 on a file.
func TestARunningJobIsNotReclaimedWhileAnotherProcessHoldsTheLock(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		runs := filepath.Join(t.TempDir(), "runs")
		mustLite(t, db, "", "enqueue", "--queue", "long", "held")
		job := listJobs(t, db)[0]
		handler := []string{"--queue", "long", "-c", "1", "--heartbeat", "100ms", "--stale-after", "500ms", "--",
			"sh", "-c", `echo "$LITE_JOB_GENERATION" >> ` + runs + `; sleep 4`}
		for range 2 {
			startWorker(t, db, nil, handler...)
		}
		eventually(t, "the job runs", func() bool {
			b, _ := os.ReadFile(runs)
			return len(b) > 0
		})

		var lines strings.Builder
		for range 2000 {
			fmt.Fprintf(&lines, "{\"queue\":\"after\",\"after\":[%d]}\n", job.ID)
		}
		started := time.Now()
		mustLite(t, db, lines.String(), "enqueue", "--file", "-")
		t.Logf("the enqueue took %s", time.Since(started))

		eventually(t, "the job is done", func() bool {
			j := listJobs(t, db, "--queue", "long")
			return len(j) == 1 && j[0].State == "done"
		})
		b, err := os.ReadFile(runs)
		is.NoErr(err)
		is.Equal(string(b), "1\n") // why: it ran once, never reclaimed from its live worker
	})
}
