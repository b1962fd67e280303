//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// dagLines is a workflow of 2,000 jobs as enqueue --file lines: a root;
// a fan-out of 1,000 after it; 500 that each wait for two of those; 498
// that each wait for one of those 500 and for one of the fan-out that it
// waits for too (a diamond); and a fan-in after all 498. It returns the
// lines and, by line, the lines each waits for.
func dagLines() (string, [][]int) {
	var lines strings.Builder
	var after [][]int
	add := func(name string, deps ...int) int {
		names := make([]string, len(deps))
		for i, d := range deps {
			names[i] = strconv.Quote(strconv.Itoa(d))
		}
		fmt.Fprintf(&lines, `{"name": %q, "payload": %q, "max_attempts": 1000, "after_names": [%s]}`+"\n",
			strconv.Itoa(len(after)), name, strings.Join(names, ","))
		after = append(after, deps)
		return len(after) - 1
	}
	root := add("root")
	fan := make([]int, 1000)
	for i := range fan {
		fan[i] = add("fan", root)
	}
	pairs := make([]int, 500)
	for i := range pairs {
		pairs[i] = add("pair", fan[2*i], fan[2*i+1])
	}
	var diamonds []int
	for i := range 498 {
		diamonds = append(diamonds, add("diamond", pairs[i], fan[2*i]))
	}
	add("join", diamonds...)
	return lines.String(), after
}

func TestAWorkflowRunsInOrderThroughKilledAndFrozenWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs 2,000 jobs through four workers")
	}
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		dir := t.TempDir()
		execLog := filepath.Join(dir, "exec.log")
		lines, after := dagLines()
		var enqueued struct {
			IDs   []int64
			Batch int64
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, lines, "--json", "enqueue", "--file", "-", "--batch", "report")), &enqueued))
		is.Equal(len(enqueued.IDs), 2000)

		// Each run logs its start and its end; sh's >> appends whole lines,
		// so the log's order is the order they happened in.
		script := fmt.Sprintf(`echo "start $LITE_JOB_ID" >> %[1]s; echo "end $LITE_JOB_ID" >> %[1]s`, execLog)
		start := func() *exec.Cmd {
			return startWorker(t, db, nil, "-c", "16", "--heartbeat", "100ms", "--stale-after", "400ms",
				"--grace", "200ms", "--", "sh", "-c", script)
		}
		workers := make([]*exec.Cmd, 4)
		for i := range workers {
			workers[i] = start()
		}
		kills, stops := 0, 0
		deadline := time.Now().Add(4 * time.Minute)
		for round := 0; ; round++ {
			if time.Now().After(deadline) {
				t.Fatalf("the workflow did not finish: %s", mustLite(t, db, "", "batch", strconv.FormatInt(enqueued.Batch, 10)))
			}
			time.Sleep(300 * time.Millisecond)
			w := workers[round%len(workers)]
			switch {
			case round%3 == 0 && kills < 6:
				is.NoErr(w.Process.Signal(syscall.SIGKILL))
				w.Wait()
				workers[round%len(workers)] = start()
				kills++
			case round%3 == 1 && stops < 6:
				is.NoErr(w.Process.Signal(syscall.SIGSTOP))
				time.Sleep(700 * time.Millisecond) // past stale-after: its jobs are reclaimed
				is.NoErr(w.Process.Signal(syscall.SIGCONT))
				stops++
			}
			var b struct{ Pending int }
			is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "batch", strconv.FormatInt(enqueued.Batch, 10))), &b))
			if b.Pending == 0 && kills >= 6 && stops >= 6 {
				break
			}
		}
		var reports []cliJob
		eventually(t, "the batch's callback runs", func() bool {
			reports = listJobs(t, db, "--kind", "report", "--state", "done")
			return len(reports) > 0
		})
		for _, w := range workers {
			w.Process.Signal(syscall.SIGTERM)
			w.Wait()
		}
		is.Equal(len(listJobs(t, db, "--kind", "report")), 1) // the callback, exactly once
		var counts struct{ Done, Dead, Cancelled int }
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "batch", strconv.FormatInt(enqueued.Batch, 10))), &counts))
		is.Equal(counts.Done, 2000) // 0 lost: every job done, none dead or cancelled

		// Every start of a job comes after an end of each job it waits for:
		// that end is written before its ack, the ack before the job
		// waiting is available, and that before its lease and its start.
		logText, err := os.ReadFile(execLog)
		is.NoErr(err)
		line := map[int64]int{}
		for i, id := range enqueued.IDs {
			line[id] = i
		}
		ended := make([]bool, len(enqueued.IDs))
		starts := 0
		for entry := range strings.Lines(string(logText)) {
			f := strings.Fields(entry)
			id, err := strconv.ParseInt(f[1], 10, 64)
			is.NoErr(err)
			i, ok := line[id]
			if !ok {
				continue // the callback
			}
			if f[0] == "end" {
				ended[i] = true
				continue
			}
			starts++
			for _, d := range after[i] {
				if !ended[d] {
					t.Fatalf("job %d (line %d) started before job %d (line %d), which it waits for, had ended", id, i, enqueued.IDs[d], d)
				}
			}
		}
		t.Logf("%d runs of 2,000 jobs, %d SIGKILLs, %d SIGSTOPs", starts, kills, stops)
	})
}
