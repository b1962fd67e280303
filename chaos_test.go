//go:build unix

package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/matryer/is"
)

var chaosLong = flag.Bool("chaos.long", false, "run the long chaos: 10k jobs, 100+ SIGKILLs, 50+ SIGSTOPs")

// chaosConfig shapes one chaos run.
type chaosConfig struct {
	jobs, procs, concurrency int
	work                     time.Duration // how long each job's command runs
	killEvery, stopEvery     time.Duration // SIGKILL one worker, SIGSTOP another
	releaseEvery             time.Duration // an admin force-releases a running job
	minKills, minStops       int           // keep injecting until these are reached
	deadline                 time.Duration
}

// chaosReport is what the checker found.
type chaosReport struct {
	Jobs, Done, Lost            int
	StaleApplied, StaleRejected int
	DuplicateExecutions         int
	Kills, Stops, Releases      int
	ErrorsLogged                int
	ErrorLines                  []string `json:",omitempty"` // the first few, for the report
	Integrity                   string
	Elapsed                     time.Duration
}

func (r chaosReport) String() string {
	return fmt.Sprintf("jobs %d, done %d, lost %d, results from a dead generation %d, stale acks rejected %d, "+
		"duplicate executions %d, SIGKILLs %d, SIGSTOPs %d, force-releases %d, errors logged %d, integrity %s, %s",
		r.Jobs, r.Done, r.Lost, r.StaleApplied, r.StaleRejected, r.DuplicateExecutions, r.Kills, r.Stops,
		r.Releases, r.ErrorsLogged, r.Integrity, r.Elapsed.Round(time.Second))
}

type chaosWorker struct {
	cmd     *exec.Cmd
	logs    *bytes.Buffer
	stopped time.Time // zero unless SIGSTOPped; resumed after this
}

// runChaos runs the harness with the binary bin and checks the outcome.
func runChaos(t *testing.T, bin string, cfg chaosConfig) chaosReport {
	t.Helper()
	dir := t.TempDir()
	db, execLog := filepath.Join(dir, "chaos.db"), filepath.Join(dir, "exec.log")
	var lines strings.Builder
	for i := range cfg.jobs {
		fmt.Fprintf(&lines, "{\"payload\":\"%d\",\"max_attempts\":1000}\n", i)
	}
	enq := exec.Command(bin, "--db", db, "enqueue", "--file", "-")
	enq.Stdin = strings.NewReader(lines.String())
	if out, err := enq.CombinedOutput(); err != nil {
		t.Fatalf("enqueue: %v: %s", err, out)
	}
	// Each run appends start and end to the execution log and answers
	// with the generation it ran under.
	script := fmt.Sprintf(`printf 'start %%s %%s\n' "$LITE_JOB_ID" "$LITE_JOB_GENERATION" >> %[1]s
sleep %[2]f
printf 'end %%s %%s\n' "$LITE_JOB_ID" "$LITE_JOB_GENERATION" >> %[1]s
printf '%%s' "$LITE_JOB_GENERATION"`, execLog, cfg.work.Seconds())

	var mu sync.Mutex
	var retired []*bytes.Buffer // logs of killed workers
	start := func() *chaosWorker {
		w := &chaosWorker{logs: &bytes.Buffer{}}
		w.cmd = exec.Command(bin, "--db", db, "work", "-c", strconv.Itoa(cfg.concurrency),
			"--heartbeat", "100ms", "--stale-after", "400ms", "--grace", "200ms", "--", "sh", "-c", script)
		w.cmd.Stderr = &lockedWriter{mu: &mu, w: w.logs}
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return w
	}
	workers := make([]*chaosWorker, cfg.procs)
	for i := range workers {
		workers[i] = start()
	}

	reader, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	count := func(state string) int {
		var n int
		if err := reader.QueryRow(`select count(*) from lite_jobs where state = ?`, state).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 42))
	var rep chaosReport
	began := time.Now()
	lastKill, lastStop, lastRelease := began, began, began
	for tick := time.NewTicker(25 * time.Millisecond); ; <-tick.C {
		now := time.Now()
		if now.Sub(began) > cfg.deadline {
			t.Logf("deadline passed")
			break
		}
		for _, w := range workers {
			if !w.stopped.IsZero() && now.After(w.stopped) {
				w.cmd.Process.Signal(syscall.SIGCONT)
				w.stopped = time.Time{}
			}
		}
		i := rng.IntN(len(workers))
		w := workers[i]
		switch {
		case now.Sub(lastKill) >= cfg.killEvery && w.stopped.IsZero():
			w.cmd.Process.Signal(syscall.SIGKILL)
			w.cmd.Wait()
			mu.Lock()
			retired = append(retired, w.logs)
			mu.Unlock()
			workers[i] = start()
			rep.Kills++
			lastKill = now
		case now.Sub(lastStop) >= cfg.stopEvery && w.stopped.IsZero():
			w.cmd.Process.Signal(syscall.SIGSTOP)
			w.stopped = now.Add(600 * time.Millisecond) // past stale-after
			rep.Stops++
			lastStop = now
		case now.Sub(lastRelease) >= cfg.releaseEvery:
			var id int64
			if reader.QueryRow(`select id from lite_jobs where state = 'running' limit 1`).Scan(&id) == nil {
				if exec.Command(bin, "--db", db, "release", strconv.FormatInt(id, 10)).Run() == nil {
					rep.Releases++
				}
			}
			lastRelease = now
		}
		if count("done") == cfg.jobs && rep.Kills >= cfg.minKills && rep.Stops >= cfg.minStops {
			break
		}
	}
	rep.Elapsed = time.Since(began)
	for _, w := range workers {
		w.cmd.Process.Signal(syscall.SIGCONT)
		w.cmd.Process.Signal(syscall.SIGTERM)
		w.cmd.Wait()
		retired = append(retired, w.logs)
	}

	// The checker: the database, the execution log and the workers' logs.
	rep.Jobs = cfg.jobs
	rows, err := reader.Query(`select state, generation, coalesce(cast(result as text), '') from lite_jobs`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var state, result string
		var gen int64
		if err := rows.Scan(&state, &gen, &result); err != nil {
			t.Fatal(err)
		}
		if state != "done" {
			rep.Lost++
			continue
		}
		rep.Done++
		if result != strconv.FormatInt(gen, 10) {
			rep.StaleApplied++ // a result written by a lease that was not the final one
		}
	}
	rows.Close()
	logText, err := os.ReadFile(execLog)
	if err != nil {
		t.Fatal(err)
	}
	starts := map[string]int{}
	for line := range strings.Lines(string(logText)) {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "start" {
			starts[f[1]]++
		}
	}
	for _, n := range starts {
		rep.DuplicateExecutions += n - 1
	}
	for _, l := range retired {
		text := l.String()
		rep.StaleRejected += strings.Count(text, "stale ack skipped")
		for line := range strings.Lines(text) {
			if strings.Contains(line, "level=ERROR") {
				rep.ErrorsLogged++
				if len(rep.ErrorLines) < 5 {
					rep.ErrorLines = append(rep.ErrorLines, strings.TrimSpace(line))
				}
			}
		}
	}
	if err := reader.QueryRow(`pragma integrity_check`).Scan(&rep.Integrity); err != nil {
		t.Fatal(err)
	}
	return rep
}

// lockedWriter serializes writes to w; the checker reads after the
// workers are gone.
type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestChaos(t *testing.T) {
	is := is.New(t)
	cfg := chaosConfig{jobs: 300, procs: 3, concurrency: 4, work: 50 * time.Millisecond,
		killEvery: 700 * time.Millisecond, stopEvery: time.Second, releaseEvery: 500 * time.Millisecond,
		minKills: 3, minStops: 3, deadline: 2 * time.Minute}
	if *chaosLong {
		cfg = chaosConfig{jobs: 10_000, procs: 4, concurrency: 8, work: 20 * time.Millisecond,
			killEvery: time.Second, stopEvery: 2 * time.Second, releaseEvery: 500 * time.Millisecond,
			minKills: 100, minStops: 50, deadline: 20 * time.Minute}
	}
	if n, err := strconv.Atoi(os.Getenv("LITE_CHAOS_JOBS")); err == nil {
		cfg.jobs = n // a run between the short and the long, for diagnosis
	}
	rep := runChaos(t, liteBin, cfg)
	t.Log(rep)
	for _, line := range rep.ErrorLines {
		t.Log(line)
	}
	if out := os.Getenv("LITE_CHAOS_REPORT"); out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		os.WriteFile(out, b, 0o644)
	}
	is.Equal(rep.Lost, 0)
	is.Equal(rep.StaleApplied, 0)
	is.Equal(rep.ErrorsLogged, 0)
	is.Equal(rep.Integrity, "ok")
	is.Equal(rep.Done, cfg.jobs)
}

// TestChaosNegativeControl runs the harness on a build whose acks ignore
// the generation: the checker must see stale results land, or it could
// not see them at all.
func TestChaosNegativeControl(t *testing.T) {
	is := is.New(t)
	src, err := os.ReadFile(filepath.Join("lite", "ack.go"))
	is.NoErr(err)
	unfenced := strings.NewReplacer(
		"and generation = ? and state = 'running'", "and state = 'running'",
		"and lite_jobs.generation = a.value ->> 1 and", "and",
	).Replace(string(src))
	is.True(unfenced != string(src)) // the guards to remove are there
	dir := t.TempDir()
	patched := filepath.Join(dir, "ack.go")
	is.NoErr(os.WriteFile(patched, []byte(unfenced), 0o644))
	abs, err := filepath.Abs(filepath.Join("lite", "ack.go"))
	is.NoErr(err)
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: patched}})
	overlayFile := filepath.Join(dir, "overlay.json")
	is.NoErr(os.WriteFile(overlayFile, overlay, 0o644))
	bin := filepath.Join(dir, "lite-unfenced")
	build := exec.Command("go", "build", "-overlay", overlayFile, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building without fencing: %v: %s", err, out)
	}

	rep := runChaos(t, bin, chaosConfig{jobs: 60, procs: 3, concurrency: 4, work: 300 * time.Millisecond,
		killEvery: time.Hour, stopEvery: 400 * time.Millisecond, releaseEvery: 300 * time.Millisecond,
		minStops: 6, deadline: 2 * time.Minute})
	t.Log(rep)
	is.True(rep.StaleApplied > 0) // with fencing off, stale results land and the checker sees them
}
