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
	"sync"
	"syscall"
	"testing"

	"github.com/matryer/is"
)

// runningPerKey polls, as an outside observer, how many jobs of each key
// the file has running, and keeps the most it saw of any key until stop.
func runningPerKey(t *testing.T, db string) (stop func() int) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	most := 0
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			var jobs []struct {
				Key string `json:"key"`
			}
			r := runLite(t, db, "", "--json", "ls", "--state", "running", "-n", "10000")
			if r.code != 0 || json.Unmarshal([]byte(r.stdout), &jobs) != nil {
				continue // a poll that lost a race for the file tells nothing
			}
			per := map[string]int{}
			for _, j := range jobs {
				per[j.Key]++
				most = max(most, per[j.Key])
			}
		}
	})
	var once sync.Once
	stop = func() int {
		once.Do(func() { close(done) })
		wg.Wait()
		return most
	}
	t.Cleanup(func() { stop() }) // a test that fails early stops it too
	return stop
}

func TestAPerKeyLimitHoldsAcrossWorkerProcesses(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		dir := t.TempDir()
		const n, keys = 90, 3
		var lines strings.Builder
		for i := range n {
			fmt.Fprintf(&lines, "{\"queue\":\"keyed\",\"key\":\"k%d\",\"payload\":\"%d\"}\n", i%keys, i)
		}
		mustLite(t, db, lines.String(), "enqueue", "--file", "-")
		mustLite(t, db, "", "limit", "keyed", "--per-key", "2")
		for k := range keys {
			is.NoErr(os.WriteFile(filepath.Join(dir, "k"+strconv.Itoa(k)), nil, 0o600))
		}
		// Each key logs to its own file, as mostAtOnce reads one limit's log.
		handler := []string{"-c", "16", "--heartbeat", "100ms", "--stale-after", "500ms", "--",
			"sh", "-c", fmt.Sprintf(`echo "start $PPID $LITE_JOB_ID" >> %[1]s/$LITE_JOB_KEY; sleep 0.1; echo "end $PPID $LITE_JOB_ID" >> %[1]s/$LITE_JOB_KEY`, dir)}
		poll := runningPerKey(t, db)
		workers := map[int]*exec.Cmd{}
		for range 4 {
			w := startWorker(t, db, nil, handler...)
			workers[w.Process.Pid] = w
		}
		victim := workerMidJob(t, filepath.Join(dir, "k0"), workers)
		is.NoErr(victim.Process.Signal(syscall.SIGKILL)) // mid-job: its slot comes back at reclaim
		victim.Wait()
		for k := range keys {
			appendLine(t, filepath.Join(dir, "k"+strconv.Itoa(k)), fmt.Sprintf("killed %d -\n", victim.Process.Pid))
		}
		eventually(t, "every job is done", func() bool { return len(listJobs(t, db, "--state", "done")) == n })
		polled := poll()
		for _, w := range workers {
			if w != victim {
				is.NoErr(w.Process.Signal(syscall.SIGTERM))
				is.NoErr(w.Wait())
			}
		}
		for k := range keys {
			b, err := os.ReadFile(filepath.Join(dir, "k"+strconv.Itoa(k)))
			is.NoErr(err)
			most, _ := mostAtOnce(t, string(b))
			is.True(most <= 2) // never more than the limit per key, across four processes of 16 slots
			is.Equal(most, 2)  // and the limit, not something lower, was what held them
		}
		t.Logf("polled from outside: at most %d running of one key", polled)
		is.True(polled <= 2) // the file never had more running of one key
		is.True(polled >= 1)
	})
}
