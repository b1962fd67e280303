package lite_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestRunJobNamesWhatHoldsTheJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		setup := func(t *testing.T) (*lite.Queue, *fakeClock, *lite.Worker) {
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			w, _, _ := testWorker(t, q, lite.WorkerOptions{})
			w.Handle(lite.AnyKind, func(context.Context, *lite.Job) error { return nil })
			return q, clock, w
		}
		refused := func(t *testing.T, w *lite.Worker, id int64, want string) error {
			t.Helper()
			_, err := w.RunJob(t.Context(), id)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("run job %d: got %v, want an error saying %q", id, err, want)
			}
			if strings.Contains(err.Error(), "queue") && strings.Contains(err.Error(), "at its limit") && !strings.Contains(want, "queue") {
				t.Fatalf("run job %d: %v blames the queue", id, err)
			}
			return err
		}

		t.Run("a blocked job is refused as blocked", func(t *testing.T) {
			is := is.New(t)
			q, _, w := setup(t)
			a := mustEnqueue(t, q, lite.NewJob{})
			b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
			err := refused(t, w, b, "it is blocked, waiting for 1 of the jobs it depends on")
			is.True(errors.Is(err, lite.ErrInvalidState))
			is.Equal(stateOf(t, q, b), lite.StateBlocked)
		})

		t.Run("a job its key's limit holds is refused for its key", func(t *testing.T) {
			is := is.New(t)
			q, _, w := setup(t)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunningPerKey: 1}))
			mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "host-1"})
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "host-1"})
			mustLeaseOne(t, q, "q")
			refused(t, w, id, `its key "host-1" is at its limit of 1 in queue "q" (1 running, 0 ready ahead of it)`)
			is.Equal(stateOf(t, q, id), lite.StateAvailable)
		})

		t.Run("a job its sequence holds is refused for the job ahead", func(t *testing.T) {
			is := is.New(t)
			q, _, w := setup(t)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{Sequence: lite.SequenceContinue}))
			first := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "k"})
			second := mustEnqueue(t, q, lite.NewJob{Queue: "q", Key: "k"})
			refused(t, w, second, `its key "k" runs in sequence, and job `+strconv.FormatInt(first, 10)+` of that key comes first`)
			is.Equal(stateOf(t, q, second), lite.StateAvailable)
		})

		t.Run("an expired job is refused as expired", func(t *testing.T) {
			is := is.New(t)
			q, clock, w := setup(t)
			id := mustEnqueue(t, q, lite.NewJob{ExpiresIn: time.Minute})
			clock.Advance(2 * time.Minute)
			refused(t, w, id, "it expired unstarted at 2026-01-02T03:05:05Z")
			is.Equal(stateOf(t, q, id), lite.StateAvailable)
		})

		t.Run("a job its queue's limit holds is refused for its queue", func(t *testing.T) {
			is := is.New(t)
			q, _, w := setup(t)
			is.NoErr(q.SetLimits(t.Context(), "q", lite.Limits{MaxRunning: 1}))
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			mustLeaseOne(t, q, "q")
			refused(t, w, id, `its queue "q" is at its limit`)
		})
	})
}
