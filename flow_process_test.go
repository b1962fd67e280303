//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// enqueueMany adds n jobs to queue in one call.
func enqueueMany(t *testing.T, db, queue string, n int) {
	t.Helper()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "{\"queue\":%q,\"payload\":\"%d\"}\n", queue, i)
	}
	mustLite(t, db, lines.String(), "enqueue", "--file", "-")
}

// mostAtOnce reads a log of "start WORKER JOB" and "end WORKER JOB" lines
// and returns how many jobs ran at once at most. Handlers write their end
// before lite acks, and their start after lite leases, so the log never
// shows more at once than the file had running. A "killed WORKER -" line,
// which the test writes once it has SIGKILLed a worker, ends that
// worker's runs that have no end, and returns how many it ended: the file
// holds their slots until a reclaim, but the log cannot say when that
// was, nor that a reclaimed job starts again before any other does (on
// PostgreSQL another worker's reclaim can hold the row for a moment, and
// a lease skips it). That slots come back only with a reclaim is
// lite's own test's to pin (TestASlotComesBackOnlyWhenItsJobIsReclaimed).
func mostAtOnce(t *testing.T, log string) (most, killed int) {
	t.Helper()
	open := map[string]string{} // job → worker of its open start
	dead := map[string]bool{}   // workers killed
	for line := range strings.Lines(log) {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("log line %q", line)
		}
		switch f[0] {
		case "start":
			if !dead[f[1]] { // a handler that wrote as its worker died
				open[f[2]] = f[1]
			}
		case "end":
			delete(open, f[2])
		case "killed":
			dead[f[1]] = true
			for job, worker := range open {
				if worker == f[1] {
					delete(open, job)
					killed++
				}
			}
		}
		most = max(most, len(open))
	}
	return most, killed
}

func TestMaxRunningHoldsAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		log := filepath.Join(t.TempDir(), "log")
		const n = 60
		enqueueMany(t, db, "limited", n)
		mustLite(t, db, "", "limit", "limited", "--max-running", "3")
		// sh's >> opens the log with O_APPEND: each line lands whole.
		handler := []string{"-c", "16", "--heartbeat", "100ms", "--stale-after", "500ms", "--",
			"sh", "-c", fmt.Sprintf(`echo "start $PPID $LITE_JOB_ID" >> %[1]s; sleep 0.1; echo "end $PPID $LITE_JOB_ID" >> %[1]s`, log)}
		workers := map[int]*exec.Cmd{}
		for range 4 {
			w := startWorker(t, db, nil, handler...)
			workers[w.Process.Pid] = w
		}
		victim := workerMidJob(t, log, workers)
		is.NoErr(victim.Process.Signal(syscall.SIGKILL)) // mid-job
		victim.Wait()
		appendLine(t, log, fmt.Sprintf("killed %d -\n", victim.Process.Pid))

		eventually(t, "every job is done", func() bool { return len(listJobs(t, db, "--state", "done")) == n })
		for _, w := range workers {
			if w != victim {
				is.NoErr(w.Process.Signal(syscall.SIGTERM))
				is.NoErr(w.Wait())
			}
		}
		b, err := os.ReadFile(log)
		is.NoErr(err)
		most, killed := mostAtOnce(t, string(b))
		is.True(most <= 3) // never more than the limit, across four processes of 16 slots
		is.Equal(most, 3)  // and the limit, not something lower, was what held them
		is.True(killed >= 1)
	})
}

func TestARateLimitHoldsAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		enqueueMany(t, db, "rated", 1000)
		mustLite(t, db, "", "limit", "rated", "--rate", "50/1s")
		// Paused until every worker is up, so that none of the ten seconds
		// is spent starting processes.
		mustLite(t, db, "", "pause", "rated")
		for range 4 {
			startWorker(t, db, nil, "-c", "16", "--", "true")
		}
		eventually(t, "every worker is up", func() bool {
			var up struct{ Workers []json.RawMessage }
			return json.Unmarshal([]byte(mustLite(t, db, "", "--json", "workers")), &up) == nil && len(up.Workers) == 4
		})
		mustLite(t, db, "", "resume", "rated")
		// A job's leased_at is when it started: each runs once.
		var leased []time.Time
		eventually(t, "eleven seconds of starts", func() bool {
			leased = leaseTimes(t, db)
			return len(leased) > 0 && time.Since(leased[0]) > 11*time.Second
		})
		starts := 0
		for _, at := range leased {
			if at.Sub(leased[0]) < 10*time.Second {
				starts++
			}
		}
		t.Logf("%d starts in 10 s at 50/1s", starts)
		is.True(starts >= 450 && starts <= 550)
	})
}

// leaseTimes is when each job that has started was leased, earliest
// first.
func leaseTimes(t *testing.T, db string) []time.Time {
	t.Helper()
	var jobs []struct {
		LeasedAt time.Time `json:"leased_at"`
	}
	out := mustLite(t, db, "", "--json", "ls", "-n", "10000")
	if err := json.Unmarshal([]byte(out), &jobs); err != nil {
		t.Fatalf("ls --json: %v", err)
	}
	var at []time.Time
	for _, j := range jobs {
		if !j.LeasedAt.IsZero() {
			at = append(at, j.LeasedAt)
		}
	}
	slices.SortFunc(at, time.Time.Compare)
	return at
}

// workerMidJob waits for one of workers to run a job, as a log of "start
// WORKER JOB" and "end WORKER JOB" lines shows (see mostAtOnce), and
// returns it: its start is in the log and its end is not.
func workerMidJob(t *testing.T, log string, workers map[int]*exec.Cmd) (victim *exec.Cmd) {
	t.Helper()
	eventually(t, "a worker runs a job", func() bool {
		b, _ := os.ReadFile(log)
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) == 3 && f[0] == "start" && !strings.Contains(string(b), "end "+f[1]+" "+f[2]+"\n") {
				pid, _ := strconv.Atoi(f[1])
				victim = workers[pid]
				return victim != nil
			}
		}
		return false
	})
	return victim
}

// appendLine appends line to the file at path, as the handlers' >> does.
func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		t.Fatal(err)
	}
}
