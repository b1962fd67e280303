package main

import (
	"bufio"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

// replicatedWorker starts lite work --replicate on db, each job's lease
// appended to leaseLog: "id generation".
func replicatedWorker(t *testing.T, db, replica, leaseLog string) *exec.Cmd {
	t.Helper()
	return startWorker(t, db, nil, "--replicate", replica, "--replicate-every", "50ms",
		"-c", "2", "--heartbeat", "100ms", "--stale-after", "500ms", "--",
		"sh", "-c", `echo "$LITE_JOB_ID $LITE_JOB_GENERATION" >> "$0"; sleep 0.02`, leaseLog)
}

func kill(t *testing.T, w *exec.Cmd) {
	t.Helper()
	if err := w.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	w.Wait()
}

// enqueueN enqueues n jobs on db in one run, their payloads "0" to n-1.
func enqueueN(t *testing.T, db string, n int) {
	t.Helper()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "{\"payload\":\"%d\"}\n", i)
	}
	mustLite(t, db, lines.String(), "enqueue", "--file", "-")
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
// are SIGKILLed (the replicating one among them), then the box dies: every
// process killed, the file, its WAL and Litestream's state beside it
// gone. lite restore --from brings the file back from the replica
// directory, workers resume, and every job is done; no (id, generation)
// pair in the log of every lease, kept outside the file, is ever issued
// twice, and what the box lost is within the replica's sync interval.
func TestABoxThatDiesComesBackFromItsReplica(t *testing.T) {
	is := is.New(t)
	box := t.TempDir()
	db := filepath.Join(box, "q.db")
	replica := "file://" + t.TempDir()
	leaseLog := filepath.Join(t.TempDir(), "leases")
	const n = 300
	enqueueN(t, db, n)

	workers := []*exec.Cmd{replicatedWorker(t, db, replica, leaseLog), replicatedWorker(t, db, replica, leaseLog)}
	for _, at := range []int{n / 10, n / 5} {
		eventually(t, fmt.Sprintf("%d jobs are done", at), func() bool { return countDone(t, db) >= at })
		kill(t, workers[0]) // the oldest: the one that replicates, the first time
		workers = append(workers[1:], replicatedWorker(t, db, replica, leaseLog))
	}
	eventually(t, "a third of the jobs are done", func() bool { return countDone(t, db) >= n/3 })
	died := time.Now()
	for _, w := range workers {
		kill(t, w)
	}
	doneAtDeath := countDone(t, db)
	is.NoErr(os.RemoveAll(box)) // the disk is gone
	is.NoErr(os.MkdirAll(box, 0o700))

	out := mustLite(t, db, "", "restore", "--from", replica)
	is.True(strings.HasPrefix(out, "restored "+replica+" to "+db+": "))
	lost := died.Sub(lastCommit(t, db))
	doneRestored := countDone(t, db)
	t.Logf("the box lost its last %s of commits: %d jobs done at its death, %d in the replica (sync every 50ms)",
		lost.Round(time.Millisecond), doneAtDeath, doneRestored)
	is.True(lost < 2*time.Second)
	is.True(doneRestored <= doneAtDeath)

	for range 2 {
		workers = append(workers, replicatedWorker(t, db, replica, leaseLog))
	}
	eventually(t, "every job is done after the restore", func() bool { return countDone(t, db) == n })
	is.Equal(len(listJobs(t, db)), n) // the same jobs, none lost, none made up

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
	is.True(len(seen) >= n)
}

func TestReplicationFlagsRefuseWhatTheyCannotDo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	for _, c := range []struct {
		why  string
		args []string
		code int
	}{
		{"--from with SRC", []string{"restore", "--from", "file:///tmp/r", "copy.db"}, 2},
		{"--from with --in-place", []string{"restore", "--from", "file:///tmp/r", "--in-place"}, 2},
		{"--timestamp without --from", []string{"restore", "copy.db", "--timestamp", "2026-12-01T22:30:00Z"}, 2},
		{"a replica URL lite cannot replicate to", []string{"work", "--replicate", "s3://bucket/lite", "--", "true"}, 2},
		{"an SFTP URL without the server's host key", []string{"restore", "--from", "sftp://ada:s3cret@nas/lite"}, 2},
		{"serve --replicate without workers", []string{"serve", "--replicate", "file:///tmp/r"}, 2},
		{"a zero --replicate-every", []string{"work", "--replicate", "file:///tmp/r", "--replicate-every", "0s", "--", "true"}, 2},
	} {
		t.Run("lite refuses "+c.why+" in one line", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", c.args...)
			is.Equal(r.code, c.code)
			is.Equal(strings.Count(r.stderr, "\n"), 1)
			is.True(!strings.Contains(r.stderr, "s3cret")) // a URL's password is never printed
		})
	}
}
