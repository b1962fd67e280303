package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/liteq/lite/lite"
)

// Durable execution's figures, measured with --durable: what recording
// steps costs a job, what parked jobs cost a worker that has nothing to
// do, and how soon a signal reaches the job that awaits it in another
// process.

// stepsPerJob is how many steps each job of the steps figures records.
const stepsPerJob = 10

// stepNames are the steps' names, made once rather than at every step.
var stepNames = func() []string {
	names := make([]string, stepsPerJob)
	for i := range names {
		names[i] = fmt.Sprintf("step-%d", i+1)
	}
	return names
}()

// durable adds the figures of --durable: jobs of stepsPerJob steps at
// each concurrency of plain, the run's worker figures, whose rates are
// their references; an idle worker's CPU with and without parked jobs;
// and a signal's latency from another process.
func (r *benchRun) durable(ctx context.Context, plain []workerFigure) error {
	for _, f := range plain {
		rate, _, err := r.stepsRate(ctx, f.concurrency)
		if err != nil {
			return err
		}
		target := 0.0
		if f.concurrency == 256 {
			target = 0.25
		}
		r.ratio(fmt.Sprintf("worker, jobs of %d steps, concurrency %d", stepsPerJob, f.concurrency),
			rate, plainAt(f.concurrency), target)
	}
	// An idle worker writes nothing but its heartbeats: with FULL it
	// would measure the same again. A server has no sync of its own.
	if r.server != nil || r.sync == lite.SyncNormal {
		if err := r.idleCPU(ctx); err != nil {
			return err
		}
	}
	lat, err := r.signals(ctx)
	if err != nil {
		return err
	}
	r.addQuantiles("signal from another process, Signal to AwaitSignal's return", lat,
		quantile{"p50", 0.5, 20}, quantile{"p90", 0.9, 0})
	return nil
}

// stepsRate prefills jobs and measures how fast a worker at concurrency
// runs them as jobs of stepsPerJob steps, each a RunStep whose fn does
// nothing; ran counts the fns that ran. A tenth of a plain figure's
// prefill is more than it takes: the prefill is sized for R2, and each
// step is a write of its own where a plain job's ack is one write of
// many.
func (r *benchRun) stepsRate(ctx context.Context, concurrency int) (rate float64, ran int64, err error) {
	q, db, err := r.open(ctx, fmt.Sprintf("steps-%d.db", concurrency))
	if err != nil {
		return 0, 0, err
	}
	defer r.close(q, db)
	jobs := max(r.prefill()/stepsPerJob, 1)
	if err := r.fill(ctx, q, jobs, lite.StateAvailable); err != nil {
		return 0, 0, err
	}
	var calls atomic.Int64
	rate, err = drain(ctx, q, concurrency, r.c.Duration, int64(jobs), io.Discard, steps(&calls))
	return rate, calls.Load(), err
}

// steps is a handler of stepsPerJob steps; each step's fn adds one to
// ran when it runs.
func steps(ran *atomic.Int64) lite.Handler {
	return func(ctx context.Context, _ *lite.Job) error {
		for i, name := range stepNames {
			if _, err := lite.RunStep(ctx, name, func(context.Context) (int, error) {
				ran.Add(1)
				return i, nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
}

// farFuture is how long the idle figure's jobs sleep: none wakes while
// it is measured.
const farFuture = 365 * 24 * time.Hour

// sleepFar parks its job for farFuture.
func sleepFar(ctx context.Context, _ *lite.Job) error {
	return lite.Sleep(ctx, farFuture)
}

// idleCPU has a child process run an idle worker for --idle on an empty
// queue, then on the same queue once --parked jobs sleep in it, and adds
// the CPU each used, as a share of one core. A parked job holds no slot
// and is not due: the two should match.
func (r *benchRun) idleCPU(ctx context.Context) error {
	q, db, err := r.open(ctx, "idle.db")
	if err != nil {
		return err
	}
	defer r.close(q, db)
	empty, err := r.idleShare(ctx, db)
	if err != nil {
		return err
	}
	if err := r.fill(ctx, q, r.c.Parked, lite.StateAvailable); err != nil {
		return err
	}
	if _, err := drain(ctx, q, 256, time.Hour, int64(r.c.Parked), io.Discard, sleepFar); err != nil {
		return err
	}
	parked, err := r.idleShare(ctx, db)
	if err != nil {
		return err
	}
	r.add(Row{Figure: "CPU of an idle worker, no job parked", Value: empty, Unit: "% of a core"})
	row := Row{Figure: fmt.Sprintf("CPU of an idle worker, %d jobs sleeping", r.c.Parked), Value: parked, Unit: "% of a core"}
	// "About equal", read as within half again: an idle worker's CPU is a
	// few milliseconds a second, and a single run's swings by as much.
	if empty > 0 {
		row.Ratio, row.Against, row.Target = parked/empty, "none parked", "<= 1.5x"
		row.goal = func(row Row) bool { return row.Ratio <= 1.5 }
		row.judge()
	}
	r.add(row)
	return nil
}

// idleSettle is how long an idle child's worker runs before its CPU is
// watched: its start (announcing itself, the first lease and reclaim) is
// not idleness. A watch of --idle's default 5s that begins then holds
// one heartbeat and one reclaim, which begin with the worker.
const idleSettle = time.Second

// idleShare runs an idle bench child on db and returns the CPU it used
// over --idle, in percent of one core. A job that child started fails
// the figure: every job it could see sleeps far into the future.
func (r *benchRun) idleShare(ctx context.Context, db string) (float64, error) {
	child, err := r.child(ctx, db, "idle", r.c.Idle.String())
	if err != nil {
		return 0, err
	}
	out, _, err := r.wait(child)
	if err != nil {
		return 0, err
	}
	var cpu, wall time.Duration
	var started int
	if _, err := fmt.Sscan(out, &cpu, &wall, &started); err != nil {
		return 0, fmt.Errorf("idle child said %q: %w", out, err)
	}
	if started > 0 {
		return 0, fmt.Errorf("idle worker: it started %d jobs, where none was due", started)
	}
	return 100 * cpu.Seconds() / wall.Seconds(), nil
}

// watchIdle is an idle child: it runs a worker on q, as lite work does
// with nothing to do, and after idleSettle prints the CPU time this
// process used over the next d, the wall time that took, and how many
// jobs the worker started, in nanoseconds and jobs on one line.
func watchIdle(ctx context.Context, q *lite.Queue, d time.Duration, out io.Writer) error {
	var started atomic.Int64
	w, err := lite.NewWorker(q, lite.WorkerOptions{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnEvent: func(ev lite.Event) {
			if ev.Kind == lite.EventStarted {
				started.Add(1)
			}
		},
	})
	if err != nil {
		return err
	}
	w.Handle(lite.AnyKind, sleepFar)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- w.Run(ctx) }()
	idleFor := func(d time.Duration) error {
		select {
		case err := <-ran:
			return fmt.Errorf("the idle worker stopped: %v", err)
		case <-time.After(d):
			return nil
		}
	}
	if err := idleFor(idleSettle); err != nil {
		return err
	}
	before, err := cpuTime()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := idleFor(d); err != nil {
		return err
	}
	after, err := cpuTime()
	if err != nil {
		return err
	}
	wall := time.Since(start)
	stop()
	if err := <-ran; err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%d %d %d\n", after-before, wall, started.Load())
	return err
}

// signalName is the signal the await jobs wait for.
const signalName = "go"

// signals measures, Samples times, the time from a call of Signal in
// this process to the return of AwaitSignal in a calls child, whose job
// was parked awaiting it.
func (r *benchRun) signals(ctx context.Context) ([]time.Duration, error) {
	q, db, err := r.open(ctx, "signals.db")
	if err != nil {
		return nil, err
	}
	defer r.close(q, db)
	child, err := r.child(ctx, db, "calls", "-")
	if err != nil {
		return nil, err
	}
	lat := make([]time.Duration, r.c.Samples)
	for i := range lat {
		if lat[i], err = signalOne(ctx, q); err != nil {
			return nil, err
		}
	}
	if _, err := q.Enqueue(ctx, lite.NewJob{Kind: stopKind}); err != nil {
		return nil, err
	}
	if _, _, err := r.wait(child); err != nil {
		return nil, err
	}
	return lat, nil
}

// signalOne enqueues an await job, waits for it to park in the calls
// child, signals it, and returns the time from Signal's call to
// AwaitSignal's return, which the job's result holds.
func signalOne(ctx context.Context, q *lite.Queue) (time.Duration, error) {
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: awaitKind})
	if err != nil {
		return 0, err
	}
	if err := awaitJob(ctx, q, id, "park", func(j *lite.Job) bool { return j.Parked == lite.ParkedSignal }); err != nil {
		return 0, err
	}
	time.Sleep(20 * time.Millisecond) // let the child's worker go idle, as it is when a signal comes
	sent := time.Now().UnixNano()
	if err := q.Signal(ctx, id, signalName, strconv.AppendInt(nil, sent, 10)); err != nil {
		return 0, err
	}
	j, err := q.Wait(ctx, id)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(string(j.Result), 10, 64)
	if j.State != lite.StateDone || err != nil {
		return 0, fmt.Errorf("signal: job %d ended %s with result %q", id, j.State, j.Result)
	}
	return time.Duration(ns), nil
}

// awaitSignal awaits the signal signalName, whose payload is when its
// sender called Signal, in unix nanoseconds, and sets the job's result to
// the nanoseconds from then to AwaitSignal's return.
func awaitSignal(ctx context.Context, _ *lite.Job) error {
	payload, err := lite.AwaitSignal(ctx, signalName, 0)
	if err != nil {
		return err // the park, the first time
	}
	returned := time.Now()
	sent, err := strconv.ParseInt(string(payload), 10, 64)
	if err != nil {
		return lite.Permanent(err)
	}
	lite.SetResult(ctx, strconv.AppendInt(nil, returned.Sub(time.Unix(0, sent)).Nanoseconds(), 10))
	return nil
}
