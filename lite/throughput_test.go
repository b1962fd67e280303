package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestThroughputCountsTheWindowsMinutes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		finish := func(queue string, fail bool) {
			mustEnqueue(t, q, lite.NewJob{Queue: queue, MaxAttempts: 1})
			j := mustLeaseOne(t, q, queue)
			if fail {
				is.NoErr(q.AckFailed(ctx, j.Lease(), errors.New("no")))
				return
			}
			is.NoErr(q.AckDone(ctx, j.Lease(), nil))
		}
		finish("mail", false) // two hours before: out of the window
		clock.Advance(2 * time.Hour)
		start := clock.Now().Truncate(time.Minute)
		finish("mail", false)
		finish("mail", true)
		clock.Advance(time.Minute)
		finish("mail", false)
		finish("img", false)
		mustEnqueue(t, q, lite.NewJob{Queue: "img"})
		is.NoErr(q.Cancel(ctx, mustLeaseOne(t, q, "img").ID)) // cancelled is neither done nor dead

		got, err := q.Throughput(ctx, time.Hour)
		is.NoErr(err)
		is.Equal(got, []lite.Throughput{
			{Queue: "img", Minute: start.Add(time.Minute), Done: 1},
			{Queue: "mail", Minute: start, Done: 1, Dead: 1},
			{Queue: "mail", Minute: start.Add(time.Minute), Done: 1},
		})
	})
}

func TestListFindsJobsByUniqueKey(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{Queue: "mail", UniqueKey: "a"})
		b := mustEnqueue(t, q, lite.NewJob{Queue: "mail", UniqueKey: "b"})
		mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
		jobs, err := q.List(t.Context(), lite.ListFilter{UniqueKey: "b"})
		is.NoErr(err)
		is.Equal(len(jobs), 1)
		is.Equal(jobs[0].ID, b)
	})
}

func TestBacklogCountsTheUnfinishedJobsAsStatsDoes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		for range 3 {
			mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
		}
		mustEnqueue(t, q, lite.NewJob{Queue: "mail", Delay: time.Hour})
		mustEnqueue(t, q, lite.NewJob{Queue: "done", MaxAttempts: 1})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "done").Lease(), nil))
		mustLeaseOne(t, q, "mail")
		clock.Advance(time.Minute)

		backlog, err := q.Backlog(ctx)
		is.NoErr(err)
		is.Equal(backlog, []lite.QueueStats{{Queue: "mail", OldestReady: time.Minute,
			Counts: map[lite.State]int64{lite.StateAvailable: 3, lite.StateRunning: 1}}}) // a queue with finished jobs alone has none
		stats, err := q.Stats(ctx)
		is.NoErr(err)
		is.Equal(stats[1].OldestReady, backlog[0].OldestReady)
	})
}

func TestBacklogCarriesEachQueuesPauseAndLimits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		mustEnqueue(t, q, lite.NewJob{Queue: "mail"})
		is.NoErr(q.Pause(ctx, "mail"))
		is.NoErr(q.SetLimits(ctx, "idle", lite.Limits{MaxRunning: 2}))

		backlog, err := q.Backlog(ctx)
		is.NoErr(err)
		is.Equal(backlog, []lite.QueueStats{
			{Queue: "idle", Counts: map[lite.State]int64{}, Limits: lite.Limits{MaxRunning: 2}}, // settings and no job
			{Queue: "mail", Counts: map[lite.State]int64{lite.StateAvailable: 1}, Paused: true},
		})
	})
}
