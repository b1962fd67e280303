//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// durableJobs is how many jobs a durable process test runs:
// LITE_DURABLE_PROCESS_JOBS (issue 31 asks for 1000), or ciJobs, few
// enough that the test takes well under a minute in CI.
func durableJobs(t *testing.T, ciJobs int) int {
	t.Helper()
	s := os.Getenv("LITE_DURABLE_PROCESS_JOBS")
	if s == "" {
		return ciJobs
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("LITE_DURABLE_PROCESS_JOBS=%q: not a count of jobs", s)
	}
	return n
}

// durableSetupSQL makes the test's own tables beside lite's: the Go
// handlers' side effects, and an audit of every step record with what
// the job's row held as it was inserted (a trigger on lite_steps, in
// the inserting transaction).
var durableSetupSQL = map[string][]string{
	"sqlite": {
		`create table durable_effects (id integer primary key autoincrement, job_id integer not null,
    step text not null, generation integer not null, job_generation integer not null, job_state text not null) strict`,
		`create table durable_audit (job_id integer not null, name text not null, generation integer not null,
    job_generation integer, job_state text) strict`,
		`create trigger durable_audit after insert on lite_steps begin
    insert into durable_audit select new.job_id, new.name, new.generation, generation, state from lite_jobs where id = new.job_id;
end`,
	},
	"postgres": {
		`create table durable_effects (id bigint generated always as identity primary key, job_id bigint not null,
    step text not null, generation bigint not null, job_generation bigint not null, job_state text not null)`,
		`create table durable_audit (job_id bigint not null, name text not null, generation bigint not null,
    job_generation bigint, job_state text)`,
		`create function durable_audit() returns trigger language plpgsql as $$
begin
    insert into durable_audit select new.job_id, new.name, new.generation, generation, state from lite_jobs where id = new.job_id;
    return null;
end $$`,
		`create trigger durable_audit after insert on lite_steps for each row execute function durable_audit()`,
	},
}

// resultText reads a blob column as text, on each engine.
var resultText = map[string]func(col string) string{
	"sqlite":   func(col string) string { return "cast(" + col + " as text)" },
	"postgres": func(col string) string { return "convert_from(" + col + ", 'UTF8')" },
}

// durableProc is one worker process of a durable test.
type durableProc struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	logs    bytes.Buffer // its stderr, under mu
	stopped time.Time    // zero unless SIGSTOPped: resumed after this
	serving time.Time    // when it was first seen serving; zero before
}

// stderr is where the process writes its log.
func (p *durableProc) stderr() io.Writer { return &lockedWriter{mu: &p.mu, w: &p.logs} }

func (p *durableProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// durableRun is one durable test on one engine: its jobs, its workers
// and what was done to them.
type durableRun struct {
	t      *testing.T
	engine string
	db     string
	q      *lite.Queue
	ids    []int64
	start  func() *durableProc
	signal func(id int64, payload string) error
	// ready is the line a worker logs once it serves: SIGTERM stops it
	// cleanly from then on.
	ready string
	// faultEvery is the mean time between two faults (each gap drawn
	// from half of it to one and a half), and longestStop how long a
	// SIGSTOP may last: from 100 ms to it, so that some outlast the
	// workers' stale-after and some do not.
	faultEvery, longestStop time.Duration
	// perJob is how much longer than 3 minutes the run may take for each
	// job before the test gives up.
	perJob time.Duration

	workers      []*durableProc
	retired      []*durableProc // killed
	kills, stops int
	early        int // signals sent to a job not seen awaiting them
	elapsed      time.Duration
}

// newDurableRun opens db, makes the test's tables and enqueues n jobs.
func newDurableRun(t *testing.T, e cliEngine, n int) *durableRun {
	t.Helper()
	is := is.New(t)
	db := e.db(t)
	q, err := lite.Open(t.Context(), db, lite.Options{})
	is.NoErr(err)
	t.Cleanup(func() { q.Close() })
	for _, s := range durableSetupSQL[e.name] {
		_, err := q.DB().ExecContext(t.Context(), s)
		is.NoErr(err)
	}
	jobs := make([]lite.NewJob, n)
	for i := range jobs {
		jobs[i] = lite.NewJob{MaxAttempts: 1000} // a lapsed lease spends an attempt
	}
	enqueued, err := q.EnqueueBatch(t.Context(), jobs)
	is.NoErr(err)
	r := &durableRun{t: t, engine: e.name, db: db, q: q}
	for _, j := range enqueued {
		r.ids = append(r.ids, j.ID)
	}
	return r
}

// count runs a query that answers one number.
func (r *durableRun) count(query string) int {
	r.t.Helper()
	var n int
	if err := r.q.DB().QueryRowContext(r.t.Context(), query).Scan(&n); err != nil {
		r.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// rows runs a query and returns its rows as text, each "a b c".
func (r *durableRun) rows(query string) []string {
	r.t.Helper()
	rows, err := r.q.DB().QueryContext(r.t.Context(), query)
	if err != nil {
		r.t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			r.t.Fatal(err)
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			f[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(f, " "))
	}
	if err := rows.Err(); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// signaller sends each job its signal "go" once, with the payload
// "sig-ID": to every fourth from the start, one every 20 ms,
// whatever they are doing (the signal is kept until the job awaits it);
// to every other when it is found awaiting it. It returns when every job
// has its signal or stop closes.
func (r *durableRun) signaller(stop <-chan struct{}, errs chan<- error) {
	unsent := map[int64]bool{}
	var early []int64
	for i, id := range r.ids {
		unsent[id] = true
		if i%4 == 0 {
			early = append(early, id)
		}
	}
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	send := func(id int64) bool {
		if err := r.signal(id, fmt.Sprintf("sig-%d", id)); err != nil {
			fail(fmt.Errorf("signal job %d: %w", id, err))
			return false
		}
		delete(unsent, id)
		return true
	}
	for tick := time.NewTicker(20 * time.Millisecond); len(unsent) > 0; {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		rows, err := r.q.DB().Query(`select id from lite_jobs where parked = 'signal'`)
		if err != nil {
			fail(err)
			return
		}
		var awaiting []int64
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				fail(err)
				return
			}
			awaiting = append(awaiting, id)
		}
		rows.Close()
		for _, id := range awaiting {
			if unsent[id] && !send(id) {
				return
			}
		}
		if len(early) > 0 {
			if id := early[0]; unsent[id] {
				if !send(id) {
					return
				}
				r.early++
			}
			early = early[1:]
		}
	}
}

// run starts four workers and, until every job is done, SIGKILLs one
// (and starts another in its place) or SIGSTOPs one (SIGCONT after 100 ms
// to longestStop) at random moments, while the signaller sends the
// signals; a worker is spared until it has served for faultEvery. Then
// it stops the workers.
func (r *durableRun) run() {
	t := r.t
	t.Helper()
	const minKills, minStops = 3, 3
	r.workers = make([]*durableProc, 4)
	for i := range r.workers {
		r.workers[i] = r.start()
	}
	stopSignals, signalErrs, signalled := make(chan struct{}), make(chan error, 1), make(chan struct{})
	go func() {
		defer close(signalled)
		r.signaller(stopSignals, signalErrs)
	}()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 31))
	began := time.Now()
	deadline := began.Add(3*time.Minute + time.Duration(len(r.ids))*r.perJob)
	gap := func() time.Duration { return r.faultEvery/2 + time.Duration(rng.Int64N(int64(r.faultEvery))) }
	nextFault := began.Add(gap())
	for tick := time.NewTicker(25 * time.Millisecond); ; <-tick.C {
		now := time.Now()
		for _, w := range r.workers {
			if !w.stopped.IsZero() && now.After(w.stopped) {
				w.cmd.Process.Signal(syscall.SIGCONT)
				w.stopped = time.Time{}
			}
			if w.serving.IsZero() && strings.Contains(w.log(), r.ready) {
				w.serving = now
			}
		}
		select {
		case err := <-signalErrs:
			close(stopSignals)
			t.Fatal(err)
		default:
		}
		if now.After(deadline) {
			close(stopSignals)
			states := r.rows(`select state, parked, count(*) from lite_jobs group by state, parked`)
			running := r.rows(`select id, generation, locked_by, heartbeat_at from lite_jobs where state = 'running'`)
			for _, w := range r.workers {
				w.cmd.Process.Kill()
				w.cmd.Wait()
				log := w.log()
				t.Logf("a worker's log, to its last 1,000 bytes: %s", log[max(0, len(log)-1000):])
			}
			t.Fatalf("the jobs did not finish after %d SIGKILLs and %d SIGSTOPs: %v; running (id generation locked_by heartbeat_at): %v",
				r.kills, r.stops, states, running)
		}
		if now.After(nextFault) {
			nextFault = now.Add(gap())
			i := rng.IntN(len(r.workers))
			switch w := r.workers[i]; {
			case !w.stopped.IsZero(), w.serving.IsZero() || now.Sub(w.serving) < r.faultEvery:
				// Frozen already, or not serving for long: on a loaded
				// machine a new worker can take seconds to start, and
				// faults faster than that would stop all work.
			case rng.IntN(2) == 0:
				w.cmd.Process.Signal(syscall.SIGKILL)
				w.cmd.Wait()
				r.retired = append(r.retired, w)
				r.workers[i] = r.start()
				r.kills++
			default:
				w.cmd.Process.Signal(syscall.SIGSTOP)
				w.stopped = now.Add(100*time.Millisecond + time.Duration(rng.Int64N(int64(r.longestStop-100*time.Millisecond))))
				r.stops++
			}
		}
		if r.kills >= minKills && r.stops >= minStops && r.count(`select count(*) from lite_jobs where state = 'done'`) == len(r.ids) {
			break
		}
	}
	r.elapsed = time.Since(began)
	close(stopSignals)
	<-signalled
	for _, w := range r.workers {
		w.cmd.Process.Signal(syscall.SIGCONT)
	}
	eventually(t, "every worker serves", func() bool {
		return !slices.ContainsFunc(r.workers, func(w *durableProc) bool { return !strings.Contains(w.log(), r.ready) })
	})
	for _, w := range r.workers {
		w.cmd.Process.Signal(syscall.SIGTERM)
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("a worker that was not killed exited with %v: %s", err, w.log())
		}
	}
}

// logged counts the lines of every worker's log that hold s, and
// returns the first few.
func (r *durableRun) logged(s string) (int, []string) {
	n, first := 0, []string(nil)
	for _, w := range append(slices.Clone(r.retired), r.workers...) {
		for line := range strings.Lines(w.log()) {
			if strings.Contains(line, s) {
				n++
				if len(first) < 5 {
					first = append(first, strings.TrimSpace(line))
				}
			}
		}
	}
	return n, first
}

// checkCommon asserts what both variants promise: every job done with
// its own signal's payload; each of its five steps recorded once; each
// signal consumed once, by the generation that recorded what its await
// got; no race report from a Go worker. checkAudit checks the records'
// generations.
func (r *durableRun) checkCommon() {
	t := r.t
	t.Helper()
	is := is.New(t)
	n := len(r.ids)
	is.Equal(r.count(`select count(*) from lite_jobs where state = 'done'`), n) // every job done, none dead
	is.Equal(r.count(`select count(*) from lite_jobs where `+resultText[r.engine]("result")+` = 'sig-' || id`), n)
	is.Equal(r.count(`select count(*) from lite_steps where name in ('s1', 's2', 's3', 's4', 's5')`), 5*n)
	is.Equal(r.count(`select count(*) from lite_jobs j where (select count(*) from lite_steps s
where s.job_id = j.id and s.name in ('s1', 's2', 's3', 's4', 's5')) <> 5`), 0)

	// The audit saw every record inserted (checkAudit reads what it saw).
	is.Equal(r.count(`select count(*) from durable_audit`), r.count(`select count(*) from lite_steps`))

	// One signal a job, consumed once, by the lease that recorded what
	// its await got.
	is.Equal(r.count(`select count(*) from lite_signals`), n)
	is.Equal(r.count(`select count(distinct job_id) from lite_signals`), n)
	is.Equal(r.count(`select count(*) from lite_signals where consumed_at is null`), 0)
	is.Equal(r.count(`select count(*) from lite_signals g join lite_steps s on s.job_id = g.job_id
where s.name like 'lite:signal:go%:got' and s.generation = g.consumed_by_generation`), n)
	is.Equal(r.count(`select count(*) from lite_steps where name like 'lite:signal:go%:got'`), n)

	errors, first := r.logged("level=ERROR")
	for _, l := range first {
		t.Log(l)
	}
	races, _ := r.logged("DATA RACE")
	is.Equal(races, 0)
	t.Logf("%s: %d jobs, %d SIGKILLs, %d SIGSTOPs, %d signals sent to a job not seen awaiting, %d error lines logged, %s",
		r.engine, n, r.kills, r.stops, r.early, errors, r.elapsed.Round(time.Millisecond))
}

// checkAudit fails the test with what the caller found broken, and with
// every step record, lite's own included, inserted while its lease no
// longer held the running job: a record is an owner's write, ordered
// with every change of its job (the file's write lock on SQLite, the
// job's row lock on PostgreSQL).
func (r *durableRun) checkAudit(broken ...string) {
	t := r.t
	t.Helper()
	stale := r.rows(`select job_id, name, generation, coalesce(job_generation, -1), coalesce(job_state, 'none') from durable_audit
where job_generation is null or job_generation <> generation or job_state <> 'running'`)
	if len(stale) > 0 {
		broken = append(broken, fmt.Sprintf("%d of %d step records inserted while their lease no longer held the job (job step generation, then the job's generation and state): %v",
			len(stale), r.count(`select count(*) from durable_audit`), stale[:min(len(stale), 10)]))
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// TestDurableGoJobsThroughKilledAndFrozenWorkers runs jobs of five
// RunStepTx steps, a Sleep and an AwaitSignal in four Go worker processes
// (this test binary, see durableWorker) that are SIGKILLed and SIGSTOPped
// throughout: each step's row of the test's own table is written exactly
// once, in the transaction that records the step, by the lease that
// recorded it while that lease was the job's current one.
func TestDurableGoJobsThroughKilledAndFrozenWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs durable jobs through killed and frozen worker processes")
	}
	n := durableJobs(t, 20)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		r := newDurableRun(t, e, n)
		r.faultEvery, r.longestStop = 300*time.Millisecond, time.Second // the workers' stale-after is 400 ms
		r.perJob = time.Second
		r.ready = durableWorkerReady
		r.start = func() *durableProc {
			w := &durableProc{}
			w.cmd = exec.Command(exe, "-test.run=^$")
			w.cmd.Env = append(os.Environ(), durableWorkerEnv+"="+r.db)
			w.cmd.Stderr = w.stderr()
			is.NoErr(w.cmd.Start())
			t.Cleanup(func() { w.cmd.Process.Kill() }) // if the test stops early
			return w
		}
		r.signal = func(id int64, payload string) error {
			return r.q.Signal(context.Background(), id, "go", []byte(payload))
		}
		r.run()
		r.checkCommon()

		// Each step wrote its row once, by the lease that recorded the
		// step, while that lease held the running job; the record is
		// that generation, as its result is.
		is.Equal(r.count(`select count(*) from (select distinct job_id, step from durable_effects) d`), 5*n) // every step wrote its row
		var broken []string
		twice := r.rows(`select e.job_id, e.step, e.id, e.generation, e.job_generation, e.job_state, s.generation from durable_effects e
join lite_steps s on s.job_id = e.job_id and s.name = e.step
where (select count(*) from durable_effects o where o.job_id = e.job_id and o.step = e.step) > 1 order by e.id`)
		if len(twice) > 0 {
			broken = append(broken, fmt.Sprintf("steps that wrote their row more than once (job step row generation, the job's generation and state as it wrote, the record's generation): %v",
				twice[:min(len(twice), 20)]))
		}
		mismatched := r.rows(`select e.job_id, e.step, e.generation, e.job_generation, e.job_state, s.generation, ` + resultText[e.name]("s.result") + `
from durable_effects e join lite_steps s on s.job_id = e.job_id and s.name = e.step
where e.generation <> s.generation or e.job_generation <> e.generation or e.job_state <> 'running'
   or ` + resultText[e.name]("s.result") + ` <> cast(s.generation as text)`)
		if len(mismatched) > 0 {
			broken = append(broken, fmt.Sprintf("%d rows not written by the lease that recorded their step (job step generation job_generation job_state record_generation record_result): %v",
				len(mismatched), mismatched[:min(len(mismatched), 10)]))
		}
		lost, _ := r.logged("lease lost")
		t.Logf("%s: %d log lines of a lost lease", e.name, lost)
		r.checkAudit(broken...)
	})
}

// durableShellScript is the shell variant's lite work command: $L is lite,
// $D the test's directory. Each step's command appends "job step
// generation" to $D/runs and prints its generation, which lite step
// records; a lite step that exits 3 (the run no longer holds the job)
// appends the same to $D/refused.
const durableShellScript = `set -e
s() {
	"$L" step "$1" -- sh -c 'echo "$LITE_JOB_ID $1 $LITE_JOB_GENERATION" >> "$D/runs"; echo "$LITE_JOB_GENERATION"' sh "$1" > /dev/null || {
		c=$?
		[ $c -ne 3 ] || echo "$LITE_JOB_ID $1 $LITE_JOB_GENERATION" >> "$D/refused"
		exit $c
	}
}
s s1
s s2
"$L" sleep 200ms
s s3
p=$("$L" await-signal go)
s s4
s s5
printf %s "$p"
`

// TestDurableShellJobsThroughKilledAndFrozenWorkers is the test above for
// a shell handler: lite work processes running lite step five times, lite
// sleep and lite await-signal, signalled by lite signal. A step's command
// is outside the database, so it runs at least once: a run whose worker
// was killed or frozen mid-step may have run it, recorded nothing, and
// the next run runs it again. Each step is recorded once, with the
// output of a run of its command under the generation that recorded it.
func TestDurableShellJobsThroughKilledAndFrozenWorkers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs durable jobs through killed and frozen worker processes")
	}
	n := durableJobs(t, 4)
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		r := newDurableRun(t, e, n)
		dir := t.TempDir()
		script := fmt.Sprintf("export L='%s' D='%s'\n%s", liteBin, dir, durableShellScript)
		// Each step, sleep and await starts a lite process, which on two
		// busy cores can take a few hundred milliseconds, so a run takes
		// seconds: with the Go workers' 400 ms stale-after live workers
		// lost their jobs over and over, and with their fault every 300
		// ms few runs got to their end.
		r.faultEvery, r.longestStop = 1500*time.Millisecond, 2*time.Second
		r.perJob = 6 * time.Second
		r.ready = "lite: working"
		r.start = func() *durableProc {
			w := &durableProc{}
			w.cmd = startLite(t, r.db, nil, w.stderr(), "work", "-c", "4", "--heartbeat", "200ms", "--stale-after", "1s",
				"--grace", "200ms", "--", "sh", "-c", script)
			return w
		}
		r.signal = func(id int64, payload string) error {
			out, err := exec.Command(liteBin, "--db", r.db, "signal", strconv.FormatInt(id, 10), "go", payload).CombinedOutput()
			if err != nil {
				return fmt.Errorf("%w: %s", err, out)
			}
			return nil
		}
		r.run()
		r.checkCommon()

		// Every recorded step holds the output of a run of its command
		// under the generation that recorded it.
		b, err := os.ReadFile(filepath.Join(dir, "runs"))
		is.NoErr(err)
		runs := map[string]int{}
		total := 0
		for line := range strings.Lines(string(b)) {
			runs[strings.TrimSpace(line)]++
			total++
		}
		ranPerStep := map[string]int{}
		for line, k := range runs {
			f := strings.Fields(line)
			ranPerStep[f[0]+" "+f[1]] += k
		}
		is.Equal(len(ranPerStep), 5*n) // every step of every job ran
		for _, rec := range r.rows(`select job_id, name, generation, ` + resultText[e.name]("result") + ` from lite_steps
where name in ('s1', 's2', 's3', 's4', 's5')`) {
			f := strings.Fields(rec)
			if len(f) != 4 || f[3] != f[2] || runs[f[0]+" "+f[1]+" "+f[2]] == 0 {
				t.Errorf("step record %q is not the output of a run of its command under its generation", rec)
			}
		}
		reruns := 0
		for _, k := range ranPerStep {
			reruns += k - 1
		}
		refused, _ := os.ReadFile(filepath.Join(dir, "refused")) // none may be there
		t.Logf("%s: %d runs of the steps' commands for %d steps: %d more than once (at least once outside the database); %d lite step refused to a stale run",
			e.name, total, 5*n, reruns, strings.Count(string(refused), "\n"))
		r.checkAudit()
	})
}
