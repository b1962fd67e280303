package lite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestASignalSentTwiceWithOneKeyIsConsumedOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{Kind: "d"})
		other := mustEnqueue(t, q, lite.NewJob{Kind: "d", Queue: "other"})
		var got []string
		w := durableWorker(t, q, func(ctx context.Context, job *lite.Job) error {
			for range 2 { // two stages, each approved on its own
				p, err := lite.AwaitSignal(ctx, "approved", 0)
				if err != nil {
					return err
				}
				got = append(got, string(p))
			}
			return nil
		})
		sent, err := q.SignalOnce(ctx, id, "approved", "webhook-1", []byte("stage 1"))
		is.NoErr(err)
		is.True(sent)
		sent, err = q.SignalOnce(ctx, id, "approved", "webhook-1", []byte("stage 1")) // delivered again
		is.NoErr(err)
		is.True(!sent)
		sent, err = q.SignalOnce(ctx, other, "approved", "webhook-1", nil) // a key is the job's own
		is.NoErr(err)
		is.True(sent)

		is.Equal(mustRun(t, w, id).Kind, lite.EventParked) // the first stage consumed it; the duplicate is not there for the second
		is.Equal(got, []string{"stage 1"})
		sent, err = q.SignalOnce(ctx, id, "approved", "webhook-1", nil) // consumed, the key still holds
		is.NoErr(err)
		is.True(!sent)
		is.Equal(mustGet(t, q, id).Parked, lite.ParkedSignal)
		sent, err = q.SignalOnce(ctx, id, "approved", "webhook-2", []byte("stage 2"))
		is.NoErr(err)
		is.True(sent)
		got = nil
		is.Equal(mustRun(t, w, id).Kind, lite.EventDone)
		is.Equal(got, []string{"stage 1", "stage 2"})

		_, err = q.SignalOnce(ctx, other, "approved", "", nil)
		is.True(errors.Is(err, lite.ErrInvalid))
		_, err = q.SignalOnce(ctx, other, "approved", strings.Repeat("k", 201), nil)
		is.True(errors.Is(err, lite.ErrInvalid))
		_, err = q.SignalOnce(ctx, id, "approved", "webhook-3", nil)
		is.True(errors.Is(err, lite.ErrInvalidState)) // done
	})
}
