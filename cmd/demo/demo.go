// Package demo is lite demo: several `lite work` processes on one file of
// its own, one killed mid-job and one frozen past its stale-after, and
// every job done once. Its jobs are the binary itself again (lite
// demo-job, which calls Job).
package demo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/liteq/lite/cmd/proc"
	"github.com/liteq/lite/lite"
)

// Options are lite demo's flags. Run starts several `lite work` processes
// on one local file, kills one mid-job, freezes another past its
// stale-after, and shows every job done once, each with the result of its
// final lease. What a kill and a freeze are on each system is in
// freeze_*.go. (type:"db" is the command line's --db mapper: the path is
// made absolute.)
type Options struct {
	File    string `default:"lite-demo.db" type:"db" help:"The demo's own file: made anew if a demo made it, refused if anything else is there."`
	Jobs    int    `default:"200" help:"How many jobs to enqueue."`
	Workers int    `default:"4" help:"How many worker processes to start (at least 3)."`
}

// The demo's workers renew every 200ms and reclaim after one second, so
// that the story fits in a few seconds.
const demoStaleAfter = time.Second

// ErrUsage is in every error of Run that is its caller's to fix: a flag
// out of range, a --file that is not a demo's.
var ErrUsage = errors.New("demo: usage")

// usageError is an error of ErrUsage.
type usageError struct{ error }

func (usageError) Is(target error) bool { return target == ErrUsage }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// Run plays the demo, printing to out.
func Run(ctx context.Context, c Options, out io.Writer) error {
	if c.Jobs < 10 || c.Workers < 3 {
		return usagef("demo: needs --jobs of at least 10 and --workers of at least 3")
	}
	if lite.IsServerURL(c.File) {
		// The demo deletes what a previous demo left: on a server, that
		// would be a database's jobs.
		return usagef("demo: --file takes a path: the demo makes, and later deletes, a SQLite file of its own, never a server's database")
	}
	if err := c.clear(ctx); err != nil {
		return err
	}
	q, err := lite.Open(ctx, c.File, lite.Options{})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer q.Close()
	if err := markDemo(ctx, q); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	jobs := make([]lite.NewJob, c.Jobs)
	for i := range jobs {
		jobs[i] = lite.NewJob{Kind: "demo", Payload: fmt.Appendf(nil, "job %d", i+1)}
	}
	if _, err := q.EnqueueBatch(ctx, jobs); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	fmt.Fprintf(out, "enqueued %d jobs into %s; starting %d worker processes\n\n", c.Jobs, c.File, c.Workers)

	workers, err := c.startWorkers()
	if err != nil {
		return err
	}
	defer func() {
		for _, w := range workers {
			w.cmd.Process.Kill()
			w.cmd.Wait()
		}
	}()
	if err := c.play(ctx, q, out, workers); err != nil {
		return err
	}
	// The workers run with --exit-when-empty, so they stop by themselves,
	// the same way on every system; the thawed one first tries its acks.
	for _, w := range workers[1:] {
		w.cmd.Wait()
	}
	return c.summarize(ctx, q, out, workers)
}

// demoMarker is a table only the demo makes. The demo deletes an existing
// --file only when it holds this table, so a user's queue, or any other
// file given by mistake, is never deleted. The demo is a user of lite:
// the lite_ prefix is lite's own, and Open refuses a file with lite_
// objects it did not make.
const demoMarker = "demo_made_by_lite"

// markDemo adds the marker to a new demo file and checkpoints it into the
// main file, so that even a demo killed at once leaves a file the next
// one recognises without its -wal.
func markDemo(ctx context.Context, q *lite.Queue) error {
	_, err := q.DB().ExecContext(ctx, `create table `+demoMarker+` (note text not null) strict;
insert into `+demoMarker+` values ('made by lite demo, which may delete this file');`)
	if err != nil {
		return err
	}
	_, err = q.DB().ExecContext(ctx, `pragma wal_checkpoint(truncate)`)
	return err
}

// clear deletes a previous demo's file with its -wal and -shm, and
// refuses anything else in the way.
func (c *Options) clear(ctx context.Context) error {
	files := []string{c.File, c.File + "-wal", c.File + "-shm"}
	ours := isDemoFile(ctx, c.File)
	for _, f := range files {
		_, err := os.Lstat(f)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("demo: %w", err)
		case !ours:
			return usagef("demo: %s exists and is not a demo's file; remove it or give another --file", f)
		}
	}
	if !ours {
		return nil
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// isDemoFile reports whether path is a regular SQLite file holding the
// demo's marker. It reads the header itself, so that SQLite never opens
// a file that is not a database, and then opens it immutable: no lock,
// no journal, nothing written beside it.
func isDemoFile(ctx context.Context, path string) bool {
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	header := make([]byte, 16)
	_, err = io.ReadFull(f, header)
	f.Close()
	if err != nil || string(header) != "SQLite format 3\x00" {
		return false
	}
	db, err := sql.Open("sqlite", fileURI(path, "mode=ro&immutable=1"))
	if err != nil {
		return false
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, `select count(*) from sqlite_schema where type = 'table' and name = ?`, demoMarker).Scan(&n)
	return err == nil && n == 1
}

// fileURI is path as an SQLite file: URI with query.
func fileURI(path, query string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?" + query
}

// openWriteProbe opens the file for writeFree.
func openWriteProbe(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", fileURI(path, "_pragma=busy_timeout(250)&_txlock=immediate"))
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// writeFree reports whether a writer gets the file's write lock within
// the probe's short busy timeout. A worker frozen inside a write
// transaction keeps the lock, and "a process frozen while it holds the
// write lock blocks every writer of the file until it resumes"
// (DESIGN.md): the other workers' heartbeats lapse and healthy workers'
// jobs are reclaimed too, which is not the story the demo tells.
func writeFree(ctx context.Context, probe *sql.DB) bool {
	tx, err := probe.BeginTx(ctx, nil) // BEGIN IMMEDIATE takes the write lock
	if err != nil {
		return false
	}
	return tx.Rollback() == nil
}

type demoWorker struct {
	cmd  *exec.Cmd
	logs *proc.Buffer
}

func (c *Options) startWorkers() ([]*demoWorker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	var workers []*demoWorker
	for range c.Workers {
		w := &demoWorker{logs: &proc.Buffer{}}
		w.cmd = exec.Command(exe, "--db", c.File, "--log-level", "warn", "work", "-c", "4",
			"--heartbeat", "200ms", "--stale-after", demoStaleAfter.String(), "--grace", "1s", "--exit-when-empty", "--",
			exe, "demo-job")
		w.cmd.Stderr = w.logs
		if err := w.cmd.Start(); err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		workers = append(workers, w)
	}
	return workers, nil
}

// demoJobTakes is how long a demo job runs: long enough that a killed or
// frozen worker is caught holding some.
const demoJobTakes = 300 * time.Millisecond

// Job is the demo's job: this binary again (lite demo-job), rather than a
// shell command, so that the demo needs no shell and runs the same on
// every OS. It works for demoJobTakes and prints its result to out, which
// names the generation it ran under.
func Job(ctx context.Context, generation int64, out io.Writer) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(demoJobTakes):
	}
	_, err := fmt.Fprintf(out, "ran at generation %d", generation)
	return err
}

// play prints a live table and, as the jobs go, kills worker 1 while it
// holds jobs and freezes worker 2 for twice its stale-after.
func (c *Options) play(ctx context.Context, q *lite.Queue, out io.Writer, workers []*demoWorker) error {
	probe, err := openWriteProbe(c.File)
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer probe.Close()
	start := time.Now()
	victim, frozen := workers[0], workers[1]
	var killed bool
	var frozenAt, freezeAgainAt time.Time
	var thaw func() error
	defer func() {
		if thaw != nil {
			thaw()
		}
	}()
	fmt.Fprintf(out, "%7s  %9s  %7s  %4s  %s\n", "time", "available", "running", "done", "event")
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		counts, err := demoCounts(ctx, q)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		var events []string
		done := int(counts[lite.StateDone])
		switch {
		case !killed && done >= c.Jobs/10 && holds(ctx, q, victim) > 0:
			held := holds(ctx, q, victim)
			if err := victim.cmd.Process.Kill(); err != nil {
				return fmt.Errorf("demo: kill worker 1: %w", err)
			}
			victim.cmd.Wait()
			killed = true
			events = append(events, fmt.Sprintf(killSays+" (pid %d) holding %d jobs", 1, victim.cmd.Process.Pid, held))
		case killed && frozenAt.IsZero() && done >= c.Jobs/5 && time.Now().After(freezeAgainAt) && holds(ctx, q, frozen) > 0:
			thaw, err = freeze(frozen.cmd.Process)
			if err != nil {
				return fmt.Errorf("demo: freeze worker 2: %w", err)
			}
			if !writeFree(ctx, probe) {
				// It stopped inside a write: let it run long enough to
				// finish that write before trying again.
				err, thaw = thaw(), nil
				if err != nil {
					return fmt.Errorf("demo: thaw worker 2: %w", err)
				}
				freezeAgainAt = time.Now().Add(200 * time.Millisecond)
				break
			}
			frozenAt = time.Now()
			events = append(events, fmt.Sprintf(freezeSays+" (pid %d): frozen, holding %d jobs", 2, frozen.cmd.Process.Pid, holds(ctx, q, frozen)))
		case thaw != nil && time.Since(frozenAt) > 2*demoStaleAfter:
			err, thaw = thaw(), nil
			if err != nil {
				return fmt.Errorf("demo: thaw worker 2: %w", err)
			}
			events = append(events, fmt.Sprintf(thawSays+": it wakes up and acks leases that were reclaimed", 2))
		}
		finished := done == c.Jobs && thaw == nil
		if len(events) > 0 || n%5 == 0 || finished {
			fmt.Fprintf(out, "%6.1fs  %9d  %7d  %4d  %s\n", time.Since(start).Seconds(),
				counts[lite.StateAvailable], counts[lite.StateRunning], done, strings.Join(events, "; "))
		}
		if finished {
			return nil
		}
	}
}

func demoCounts(ctx context.Context, q *lite.Queue) (map[lite.State]int64, error) {
	stats, err := q.Stats(ctx)
	if err != nil || len(stats) == 0 {
		return map[lite.State]int64{}, err
	}
	return stats[0].Counts, nil
}

// holds counts the running jobs a worker process holds.
func holds(ctx context.Context, q *lite.Queue, w *demoWorker) int {
	running, err := q.List(ctx, lite.ListFilter{State: lite.StateRunning, Limit: 1000})
	if err != nil {
		return 0
	}
	pid := fmt.Sprintf(":%d:", w.cmd.Process.Pid)
	n := 0
	for _, j := range running {
		if strings.Contains(j.LockedBy, pid) {
			n++
		}
	}
	return n
}

func (c *Options) summarize(ctx context.Context, q *lite.Queue, out io.Writer, workers []*demoWorker) error {
	jobs, err := q.List(ctx, lite.ListFilter{Limit: c.Jobs})
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	var done, final int
	var reclaimed []*lite.Job
	for _, j := range jobs {
		if j.State == lite.StateDone {
			done++
		}
		if string(j.Result) == fmt.Sprintf("ran at generation %d", j.Generation) {
			final++
		}
		if j.Generation > 1 {
			reclaimed = append(reclaimed, j)
		}
	}
	fmt.Fprintf(out, "\n%d of %d jobs done; %d with the result of their final generation\n", done, c.Jobs, final)
	fmt.Fprintf(out, "%d jobs were reclaimed and ran again under a new generation:\n", len(reclaimed))
	for _, j := range reclaimed {
		why := ""
		if len(j.Errors) > 0 {
			why = j.Errors[len(j.Errors)-1].Error
		}
		fmt.Fprintf(out, "  job %-4d generation %d, attempt %d: %s\n", j.ID, j.Generation, j.Attempts, why)
	}
	var skipped []string
	for _, w := range workers {
		for line := range strings.Lines(w.logs.String()) {
			if strings.Contains(line, "stale ack skipped") {
				skipped = append(skipped, strings.TrimSpace(line))
			}
		}
	}
	fmt.Fprintf(out, "%d stale acks from the frozen worker were skipped, none applied:\n", len(skipped))
	for _, line := range skipped {
		fmt.Fprintf(out, "  %s\n", line)
	}
	if done != c.Jobs || final != c.Jobs {
		return errors.New("demo: not every job was done once with its final generation's result")
	}
	fmt.Fprintf(out, "\nevery job done once. Look around: lite --db %s ls, lite --db %s show %d\n", c.File, c.File, firstID(reclaimed))
	return nil
}

func firstID(jobs []*lite.Job) int64 {
	if len(jobs) == 0 {
		return 1
	}
	return jobs[0].ID
}
