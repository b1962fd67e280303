package lite_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestWaitProgressTellsOfEachReportThenEndsWithTheJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		w, _, _ := testWorker(t, q, lite.WorkerOptions{}) // heartbeats only when the test calls them
		steps, reported := make(chan float64), make(chan struct{})
		w.Handle(lite.AnyKind, func(ctx context.Context, _ *lite.Job) error {
			for f := range steps {
				if err := lite.SetProgress(ctx, f, "converting"); err != nil {
					return err
				}
				reported <- struct{}{}
			}
			lite.SetResult(ctx, []byte("converted"))
			return nil
		})
		defer runWorker(t, w)()
		id := mustEnqueue(t, q, lite.NewJob{})

		seen := make(chan *lite.Job, 10)
		waited := make(chan waitResult, 1)
		go func() {
			j, err := q.WaitProgress(t.Context(), id, func(j *lite.Job) { seen <- j })
			waited <- waitResult{j, err}
		}()
		for _, f := range []float64{0.25, 0.75} {
			steps <- f
			<-reported
			is.NoErr(w.Heartbeat(t.Context())) // a handler's reports ride its heartbeat
			j := recv(t, seen)
			want, _ := json.Marshal(f)
			is.Equal(string(j.Progress), string(want))
			is.Equal(j.ProgressNote, "converting")
		}
		close(steps)
		r := got(t, waited)
		is.NoErr(r.err)
		is.Equal(r.job.State, lite.StateDone)
		is.Equal(string(r.job.Result), "converted")
		is.Equal(len(seen), 0) // why: each report told once, and none after the end
	})
}

func TestWaitProgressOnAServerIsWokenByAReportOfAnotherProcess(t *testing.T) {
	e := onPostgres(t)
	noSafetyPoll(t)                // an hour: only the report's notification can wake the waiter in time
	t.Cleanup(lite.NoWaitSettle()) // nor do its looks again after a wake-up find the report
	is := is.New(t)
	ctx := t.Context()
	q, dsn := e.mustOpen(t, nil)
	other := mustOpenOpts(t, dsn, lite.Options{}) // another process's queue on the server
	watching(t, other)
	id := mustEnqueue(t, q, lite.NewJob{})
	l := mustLeaseOne(t, q, lite.DefaultQueue).Lease()
	is.NoErr(q.Report(ctx, l, lite.Update{Progress: json.RawMessage(`0.25`)}))

	seen := make(chan *lite.Job, 10)
	waited := make(chan waitResult, 1)
	go func() {
		j, err := other.WaitProgress(ctx, id, func(j *lite.Job) { seen <- j })
		waited <- waitResult{j, err}
	}()
	is.Equal(string(recv(t, seen).Progress), "0.25") // its first look, before it sleeps
	is.NoErr(q.Report(ctx, l, lite.Update{Progress: json.RawMessage(`0.75`), Note: "almost"}))
	j := recv(t, seen)
	is.Equal(string(j.Progress), "0.75")
	is.Equal(j.ProgressNote, "almost")
	is.NoErr(q.AckDone(ctx, l, nil))
	r := got(t, waited)
	is.NoErr(r.err)
	is.Equal(r.job.State, lite.StateDone)
}
