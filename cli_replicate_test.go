//go:build unix

package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// replicatedWorker starts lite work --replicate on db, each job's lease
// appended to leaseLog ("id generation"), its log of every job's outcome
// to events; wait adds --wait-for-replica.
func replicatedWorker(t *testing.T, db, replica, leaseLog string, events *os.File, wait bool) *exec.Cmd {
	t.Helper()
	args := []string{"--log-level", "debug", "work", "--replicate", replica, "--replicate-every", "50ms",
		"-c", "2", "--heartbeat", "100ms", "--stale-after", "500ms"}
	if wait {
		args = append(args, "--wait-for-replica")
	}
	args = append(args, "--", "sh", "-c", `echo "$LITE_JOB_ID $LITE_JOB_GENERATION" >> "$0"; sleep 0.02`, leaseLog)
	return startLite(t, db, nil, events, args...)
}

func kill(t *testing.T, w *exec.Cmd) {
	t.Helper()
	if err := w.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.Wait()
}

func countDone(t *testing.T, db string) int { return len(listJobs(t, db, "--state", "done")) }

// lastCommit is the latest time the file at db records: a lease, a
// heartbeat or a finish.
func lastCommit(t *testing.T, db string) time.Time {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ms int64
	err = conn.QueryRow(`select max(max(coalesce(leased_at, 0)), max(coalesce(heartbeat_at, 0)), max(coalesce(finished_at, 0))) from lite_jobs`).Scan(&ms)
	if err != nil {
		t.Fatal(err)
	}
	return time.UnixMilli(ms)
}

// TestABoxThatDiesComesBackFromItsReplica: workers replicating one file
// are SIGKILLed (the replicating one among them) and SIGSTOPped while a
// producer enqueues, then the box dies: every process killed, the file,
// its WAL and Litestream's state beside it gone. lite restore --from
// brings the file back from the replica directory, workers resume, and
// every job is done; no (id, generation) pair in the log of every lease,
// kept outside the file, is ever issued twice. With --wait-for-replica
// every enqueue that returned and every outcome a worker reported before
// the loss is in the restored file; without it, what the box lost is
// measured and within the replica's sync interval.
func TestABoxThatDiesComesBackFromItsReplica(t *testing.T) {
	t.Parallel()
	for _, wait := range []bool{false, true} {
		name := "without --wait-for-replica, the loss window is a few of the last commits"
		if wait {
			name = "with --wait-for-replica, no enqueue that returned and no outcome reported is lost"
		}
		t.Run(name, func(t *testing.T) { boxDiesAndComesBack(t, wait) })
	}
}

func boxDiesAndComesBack(t *testing.T, wait bool) {
	is := is.New(t)
	box := t.TempDir()
	db := filepath.Join(box, "q.db")
	replica := "file://" + t.TempDir()
	outside := t.TempDir() // what the test keeps off the box
	leaseLog := filepath.Join(outside, "leases")
	events, err := os.OpenFile(filepath.Join(outside, "events"), os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	is.NoErr(err)
	defer events.Close()
	const n = 300
	enqueueN(t, db, n)
	start := func() *exec.Cmd { return replicatedWorker(t, db, replica, leaseLog, events, wait) }

	workers := []*exec.Cmd{start(), start()}
	p := startProducer(t, db, replica, wait)
	for _, at := range []int{n / 10, n / 5} {
		eventually(t, fmt.Sprintf("%d jobs are done", at), func() bool { return countDone(t, db) >= at })
		kill(t, workers[0]) // the oldest: the one that replicates, the first time
		workers = append(workers[1:], start())
	}
	// Frozen past its leases' stale-after: its jobs are reclaimed, and
	// its acks on waking are stale; if it is the one that replicates,
	// nothing ships meanwhile.
	is.NoErr(workers[0].Process.Signal(syscall.SIGSTOP))
	time.Sleep(time.Second)
	is.NoErr(workers[0].Process.Signal(syscall.SIGCONT))
	eventually(t, "a third of the jobs are done", func() bool { return countDone(t, db) >= n/3 })
	died := time.Now()
	enqueued := p.stop()
	for _, w := range workers {
		kill(t, w)
	}
	doneAtDeath := countDone(t, db)
	is.NoErr(os.RemoveAll(box)) // the disk is gone
	is.NoErr(os.MkdirAll(box, 0o700))

	out := mustLite(t, db, "", "restore", "--from", replica)
	is.True(strings.HasPrefix(out, "restored "+replica+" to "+db+": "))
	lost := died.Sub(lastCommit(t, db))
	restored := map[int64]string{}
	for _, j := range listJobs(t, db) {
		restored[j.ID] = j.State
	}
	var enqueuesLost, outcomesLost int
	for _, id := range enqueued {
		if _, ok := restored[id]; !ok {
			enqueuesLost++
		}
	}
	reported := reportedOutcomes(t, events.Name())
	for id, state := range reported {
		if restored[id] != state {
			outcomesLost++
		}
	}
	t.Logf("the box lost its last %s of commits (sync every 50ms): %d jobs done at its death, %d in the replica; of %d enqueues that returned, %d lost; of %d outcomes reported, %d not in the replica",
		lost.Round(time.Millisecond), doneAtDeath, countDone(t, db), len(enqueued), enqueuesLost, len(reported), outcomesLost)
	is.True(lost < 2*time.Second)
	is.True(len(enqueued) > 0) // the producer enqueued while the workers ran
	if wait {
		is.Equal(enqueuesLost, 0) // each returned once it was on the replica
		is.Equal(outcomesLost, 0) // each reported once it was on the replica
	}

	for range 2 {
		workers = append(workers, start())
	}
	eventually(t, "every job is done after the restore", func() bool { return countDone(t, db) == len(restored) })

	f, err := os.Open(leaseLog)
	is.NoErr(err)
	defer f.Close()
	seen := map[string]bool{}
	scan := bufio.NewScanner(f)
	for scan.Scan() {
		is.True(!seen[scan.Text()]) // never issued twice, across the restore too
		seen[scan.Text()] = true
	}
	is.NoErr(scan.Err())
	is.True(len(seen) >= len(restored))
}

// producer runs lite enqueue --replicate, one job a run, until stop.
type producer struct {
	mu       sync.Mutex
	cmd      *exec.Cmd // the run under way
	dead     bool
	enqueued []int64 // the ids of the runs that returned before stop
	done     chan struct{}
}

func startProducer(t *testing.T, db, replica string, wait bool) *producer {
	t.Helper()
	args := []string{"--db", db, "enqueue", "--replicate", replica, "--replicate-every", "50ms"}
	if wait {
		args = append(args, "--wait-for-replica")
	}
	p := &producer{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			var out bytes.Buffer
			cmd := exec.Command(liteBin, append(args, "p")...)
			cmd.Stdout = &out
			p.mu.Lock()
			if p.dead {
				p.mu.Unlock()
				return
			}
			err := cmd.Start()
			p.cmd = cmd
			p.mu.Unlock()
			if err == nil {
				err = cmd.Wait()
			}
			p.mu.Lock()
			id, perr := strconv.ParseInt(strings.TrimSpace(out.String()), 10, 64)
			if err == nil && perr == nil && !p.dead {
				p.enqueued = append(p.enqueued, id)
			}
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

// stop kills the run under way and returns the ids enqueued before.
func (p *producer) stop() []int64 {
	p.mu.Lock()
	p.dead = true
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Kill()
	}
	p.mu.Unlock()
	<-p.done
	return p.enqueued
}

// reportedOutcomes reads the workers' debug log: each job whose outcome
// a worker reported, with the state it reported last.
func reportedOutcomes(t *testing.T, log string) map[int64]string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`msg="lite: job (done|failed)" id=(\d+) generation=\d+ .* state=(\w+)`)
	out := map[int64]string{}
	for _, m := range line.FindAllStringSubmatch(string(b), -1) {
		id, _ := strconv.ParseInt(m[2], 10, 64)
		out[id] = m[3]
	}
	return out
}
