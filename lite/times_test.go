package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// The clock a write reads may be a moment behind one read earlier: a
// reading taken before a wait for a lock, another host's clock, a
// server's clock read over a slow round trip. These tests step the fake
// clock back between two writes of one job, or forward between the two
// readings of one enqueue, and require the job's own times to stay in
// their order all the same.

// back is how far a clock steps back between two writes of one job.
const back = time.Second

func TestALeaseIsNeverBeforeItsJobWasCreated(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		// Due an hour ago, so that a clock a moment behind finds it due.
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q", RunAt: clock.Now().Add(-time.Hour)})
		clock.Advance(-back)
		leased := mustLeaseOne(t, q, "q")
		j := mustGet(t, q, id)
		is.True(!j.LeasedAt.Before(j.CreatedAt))   // leased_at >= created_at
		is.True(!j.HeartbeatAt.Before(j.LeasedAt)) // its first beat is its lease
		is.Equal(leased.LeasedAt, j.LeasedAt)      // the lease returns the time it stored
	})
}

func TestAHeartbeatIsNeverBeforeItsLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		l := mustLeaseOne(t, q, "q").Lease()
		clock.Advance(-back)
		lost, err := q.Renew(t.Context(), []lite.Lease{l})
		is.NoErr(err)
		is.NoErr(lost[0])
		j := mustGet(t, q, id)
		is.True(!j.HeartbeatAt.Before(j.LeasedAt)) // heartbeat_at >= leased_at
	})
}

// leaseEnd is a way a lease ends, by its name.
type leaseEnd struct {
	name string
	end  func(q *lite.Queue, l lite.Lease) error
}

func TestAJobNeverFinishesBeforeItsLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ends := []leaseEnd{
			{"an ack done", func(q *lite.Queue, l lite.Lease) error { return q.AckDone(t.Context(), l, nil) }},
			{"an ack of many", func(q *lite.Queue, l lite.Lease) error {
				res, err := q.AckDoneMany(t.Context(), []lite.Done{{Lease: l}})
				return errors.Join(err, res[0])
			}},
			{"a failure that buries the job", func(q *lite.Queue, l lite.Lease) error {
				return q.AckFailed(t.Context(), l, lite.Permanent(errors.New("no")))
			}},
			{"a cancel", func(q *lite.Queue, l lite.Lease) error { return q.Cancel(t.Context(), l.JobID) }},
		}
		for _, end := range ends {
			t.Run(end.name+" a moment behind the lease is not before it", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
				l := mustLeaseOne(t, q, "q").Lease()
				clock.Advance(-back)
				is.NoErr(end.end(q, l))
				j := mustGet(t, q, id)
				is.True(j.State.Finished())
				is.True(!j.FinishedAt.Before(j.LeasedAt)) // finished_at >= leased_at
			})
		}
	})
}

func TestAJobNeverFinishesBeforeItWasCreated(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ends := []struct {
			name string
			end  func(q *lite.Queue, id int64) error
		}{
			{"a cancel", func(q *lite.Queue, id int64) error { return q.Cancel(t.Context(), id) }},
			{"an expiry", func(q *lite.Queue, id int64) error {
				got, err := q.CancelExpired(t.Context())
				if err == nil && len(got) != 1 {
					err = errors.New("nothing expired")
				}
				return err
			}},
		}
		for _, end := range ends {
			t.Run(end.name+" a moment behind the enqueue is not before it", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				// Its expiry passed already: a job due now may be given one.
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q", ExpiresAt: clock.Now().Add(-time.Hour)})
				clock.Advance(-back)
				is.NoErr(end.end(q, id))
				j := mustGet(t, q, id)
				is.Equal(j.State, lite.StateCancelled)
				is.True(!j.FinishedAt.Before(j.CreatedAt)) // finished_at >= created_at
			})
		}
	})
}

func TestAJobsNextRunIsNeverBeforeTheLeaseItFollows(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ends := []leaseEnd{
			{"a snooze", func(q *lite.Queue, l lite.Lease) error { return q.Snooze(t.Context(), l, 0) }},
			{"a failure that retries the job", func(q *lite.Queue, l lite.Lease) error {
				return q.AckFailed(t.Context(), l, errors.New("again"))
			}},
		}
		for _, end := range ends {
			t.Run(end.name+" a moment behind the lease puts the next run after it", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.open(t, lite.Options{Now: clock.Now, Backoff: func(int) time.Duration { return 0 }})
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
				leased := mustLeaseOne(t, q, "q")
				clock.Advance(-back)
				is.NoErr(end.end(q, leased.Lease()))
				j := mustGet(t, q, id)
				is.Equal(j.State, lite.StateAvailable)
				is.True(!j.RunAt.Before(leased.LeasedAt)) // run_at >= the leased_at it follows
			})
		}
	})
}

func TestAJobDueNowIsNeverDueBeforeItWasCreated(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, batch := range []bool{false, true} {
			name := "one job"
			if batch {
				name = "a batch"
			}
			t.Run(name+" enqueued while the clock moves is due no earlier than it was created", func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				// Time passes between any two readings, as it does between
				// the reading that checks a job and the one taken once the
				// write holds its lock.
				ticking := func() time.Time { clock.Advance(time.Millisecond); return clock.Now() }
				q, _ := e.open(t, lite.Options{Now: ticking})
				var id int64
				if batch {
					ids, err := q.EnqueueBatch(t.Context(), []lite.NewJob{{Queue: "q"}, {Queue: "q"}})
					is.NoErr(err)
					id = ids[1].ID
				} else {
					id = mustEnqueue(t, q, lite.NewJob{Queue: "q"})
				}
				j := mustGet(t, q, id)
				is.True(!j.RunAt.Before(j.CreatedAt)) // run_at >= created_at
			})
		}
	})
}
