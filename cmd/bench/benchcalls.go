package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/liteq/lite/cmd/proc"
	"github.com/liteq/lite/lite"
)

// Durable calls: a caller that enqueues a job and waits for its result,
// an admin who cancels a running job, whose handler must stop soon, and
// (with --durable) a sender whose signal a parked job awaits. The kinds a
// calls child works:
const (
	echoKind  = "echo"  // its result is its payload
	blockKind = "block" // runs until its context ends, and notes when it did
	awaitKind = "await" // awaits a signal, see awaitSignal
	stopKind  = "stop"  // ends the child
)

// calls measures the round trip from Enqueue to Wait's done job with the
// worker in this process, then in a child process, and the delay from
// Cancel returning to the handler's context ending in that child.
func (r *benchRun) calls(ctx context.Context) error {
	q, db, err := r.open(ctx, "calls.db")
	if err != nil {
		return err
	}
	defer r.close(q, db)
	inProcess, err := r.roundTrips(ctx, q, true)
	if err != nil {
		return err
	}
	child, err := r.child(ctx, db, "calls", "-")
	if err != nil {
		return err
	}
	crossProcess, err := r.roundTrips(ctx, q, false)
	if err != nil {
		return err
	}
	cancelled, err := r.cancels(ctx, q)
	if err != nil {
		return err
	}
	if _, err := q.Enqueue(ctx, lite.NewJob{Kind: stopKind}); err != nil {
		return err
	}
	out, _, err := r.wait(child)
	if err != nil {
		return err
	}
	stops, err := stopDelays(out, cancelled)
	if err != nil {
		return err
	}
	r.addLatency("round trip, Enqueue to Wait's result, worker in this process", inProcess, 0, 0)
	r.addLatency("round trip, Enqueue to Wait's result, worker in another process", crossProcess, 0, 0)
	r.addLatency("Cancel of a running job to its handler's stop, another process", stops, 100, 500)
	return nil
}

// roundTrips enqueues an echo job and waits for its result, Samples
// times, with a worker of its own in this process (local) or the calls
// child's; the first call, which waits for the child to start, is not
// counted.
func (r *benchRun) roundTrips(ctx context.Context, q *lite.Queue, local bool) ([]time.Duration, error) {
	if local {
		stop, ran, err := runCalls(ctx, q, nil)
		if err != nil {
			return nil, err
		}
		defer func() { stop(); <-ran }()
	} else if _, err := roundTrip(ctx, q); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, r.c.Samples)
	for i := range lat {
		d, err := roundTrip(ctx, q)
		if err != nil {
			return nil, err
		}
		lat[i] = d
	}
	return lat, nil
}

func roundTrip(ctx context.Context, q *lite.Queue) (time.Duration, error) {
	start := time.Now()
	id, err := q.Enqueue(ctx, lite.NewJob{Kind: echoKind, Payload: []byte("ping")})
	if err != nil {
		return 0, err
	}
	j, err := q.Wait(ctx, id)
	if err != nil {
		return 0, err
	}
	if string(j.Result) != "ping" {
		return 0, fmt.Errorf("round trip: job %d ended %s with result %q", id, j.State, j.Result)
	}
	return time.Since(start), nil
}

// cancels enqueues a blocking job for the calls child, Samples times,
// cancels it once it runs and returns when each Cancel returned, by job.
func (r *benchRun) cancels(ctx context.Context, q *lite.Queue) (map[int64]time.Time, error) {
	cancelled := make(map[int64]time.Time, r.c.Samples)
	for range r.c.Samples {
		id, err := q.Enqueue(ctx, lite.NewJob{Kind: blockKind})
		if err != nil {
			return nil, err
		}
		if err := awaitJob(ctx, q, id, "start", func(j *lite.Job) bool { return j.State == lite.StateRunning }); err != nil {
			return nil, err
		}
		if err := q.Cancel(ctx, id); err != nil {
			return nil, err
		}
		cancelled[id] = time.Now()
		if _, err := q.Wait(ctx, id); err != nil { // the child is idle again
			return nil, err
		}
	}
	return cancelled, nil
}

// awaitJob looks at job id every millisecond until reached says it is
// there; if 10s pass first, the error says the job did not do what.
func awaitJob(ctx context.Context, q *lite.Queue, id int64, what string, reached func(*lite.Job) bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		j, err := q.Get(ctx, id)
		switch {
		case err != nil:
			return err
		case reached(j):
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("job %d did not %s in 10s", id, what)
		}
		time.Sleep(time.Millisecond)
	}
}

// stopDelays pairs the child's lines, "id unix-nanoseconds" for each
// blocking job's stop, with when its Cancel returned.
func stopDelays(out string, cancelled map[int64]time.Time) ([]time.Duration, error) {
	var lat []time.Duration
	for line := range strings.Lines(out) {
		var id, at int64
		if _, err := fmt.Sscan(line, &id, &at); err != nil {
			return nil, fmt.Errorf("calls child said %q: %w", line, err)
		}
		if c, ok := cancelled[id]; ok {
			lat = append(lat, time.Unix(0, at).Sub(c))
		}
	}
	if len(lat) != len(cancelled) {
		return nil, fmt.Errorf("calls child told of %d stops of %d cancels", len(lat), len(cancelled))
	}
	return lat, nil
}

// runCalls runs a worker of the calls kinds on q until stop is called or
// a stop job comes; ran gives what its Run returned. Each blocking job's
// stop is written to stops as "id unix-nanoseconds" (nil: not written).
func runCalls(ctx context.Context, q *lite.Queue, stops io.Writer) (stop func(), ran <-chan error, err error) {
	w, err := lite.NewWorker(q, lite.WorkerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w.Handle(echoKind, func(ctx context.Context, job *lite.Job) error {
		lite.SetResult(ctx, job.Payload)
		return nil
	})
	w.Handle(blockKind, func(ctx context.Context, job *lite.Job) error {
		<-ctx.Done()
		if stops != nil {
			fmt.Fprintf(stops, "%d %d\n", job.ID, time.Now().UnixNano())
		}
		return ctx.Err()
	})
	w.Handle(awaitKind, awaitSignal)
	w.Handle(stopKind, func(context.Context, *lite.Job) error {
		cancel()
		return nil
	})
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return cancel, done, nil
}

// serveCalls is a calls child: it works the calls kinds on q until a stop
// job comes, then prints each blocking job's stop.
func serveCalls(ctx context.Context, q *lite.Queue, out io.Writer) error {
	stops := &proc.Buffer{}
	_, ran, err := runCalls(ctx, q, stops)
	if err != nil {
		return err
	}
	if err := <-ran; err != nil {
		return err
	}
	_, err = io.WriteString(out, stops.String())
	return err
}
