package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestEachWriteOfARoundKeepsItsOwnResult pins the writer's rounds: writes
// that gather for one round share its transaction, and each keeps its own
// result. A done-ack whose CommitWithAck writes fail leaves none of them,
// a stale ack is refused, and a held unique key fails only its own
// enqueue, while the acks and the enqueue beside them commit.
func TestEachWriteOfARoundKeepsItsOwnResult(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := mustOpen(t, newFakeClock())
	_, err := q.DB().ExecContext(ctx, `create table app (x integer)`)
	is.NoErr(err)
	for range 3 {
		mustEnqueue(t, q, lite.NewJob{Kind: "k"})
	}
	mustEnqueue(t, q, lite.NewJob{Kind: "held", UniqueKey: "u", RunAt: time.Now().Add(time.Hour)})
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Kinds: []string{"k"}, Max: 3})
	is.NoErr(err)
	is.Equal(len(jobs), 3)
	_, err = q.ReleaseUnowned(ctx, jobs[2].ID)
	is.NoErr(err)

	// Prepared before the round is held, which preparing would wait for.
	is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: 1}, nil), lite.ErrLeaseLost))

	waiting, release := lite.HoldRounds(q)
	var wg sync.WaitGroup
	results := make([]error, 5)
	writes := []func() error{
		func() error {
			return q.Complete(ctx, jobs[0].Lease(), nil, func(tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `insert into app values (1)`); err != nil {
					return err
				}
				return errors.New("the app refused")
			})
		},
		func() error { return q.AckDone(ctx, jobs[1].Lease(), []byte("ok")) },
		func() error { return q.AckDone(ctx, jobs[2].Lease(), nil) },
		func() error { _, err := q.Enqueue(ctx, lite.NewJob{Kind: "held", UniqueKey: "u"}); return err },
		func() error { _, err := q.Enqueue(ctx, lite.NewJob{Kind: "new"}); return err },
	}
	for i, write := range writes {
		wg.Go(func() { results[i] = write() })
	}
	for waiting() < len(writes) {
		time.Sleep(time.Millisecond) // until every write is handed in
	}
	release()
	wg.Wait()

	is.True(results[0] != nil && !errors.Is(results[0], lite.ErrLeaseLost)) // the app's writes failed
	is.NoErr(results[1])
	is.True(errors.Is(results[2], lite.ErrLeaseLost))
	is.True(errors.Is(results[3], lite.ErrDuplicate))
	is.NoErr(results[4])
	var rows int
	is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from app`).Scan(&rows))
	is.Equal(rows, 0) // the failed writes left nothing
	states := map[int64]lite.State{}
	for _, j := range jobs {
		got, err := q.Get(ctx, j.ID)
		is.NoErr(err)
		states[j.ID] = got.State
	}
	is.Equal(states[jobs[0].ID], lite.StateRunning)
	is.Equal(states[jobs[1].ID], lite.StateDone)
	is.Equal(states[jobs[2].ID], lite.StateAvailable)
}

// TestAWriteWhoseCallerGaveUpFailsAlone pins that a write whose context
// ends while it waits for its round is not run, and fails with its
// context's error, while the writes beside it commit.
func TestAWriteWhoseCallerGaveUpFailsAlone(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := mustOpen(t, newFakeClock())
	id := mustEnqueue(t, q, lite.NewJob{Kind: "k"})
	jobs, err := q.Lease(ctx, lite.LeaseRequest{})
	is.NoErr(err)
	is.Equal(len(jobs), 1)
	// Prepared before the round is held, which preparing would wait for.
	is.True(errors.Is(q.AckDone(ctx, lite.Lease{JobID: id + 1}, nil), lite.ErrLeaseLost))

	waiting, release := lite.HoldRounds(q)
	gaveUp, giveUp := context.WithCancel(ctx)
	var enqueued, acked error
	var wg sync.WaitGroup
	wg.Go(func() { _, enqueued = q.Enqueue(gaveUp, lite.NewJob{Kind: "late"}) })
	wg.Go(func() { acked = q.AckDone(ctx, jobs[0].Lease(), nil) })
	for waiting() < 2 {
		time.Sleep(time.Millisecond) // until both writes are handed in
	}
	giveUp()
	release()
	wg.Wait()

	is.True(errors.Is(enqueued, context.Canceled))
	is.NoErr(acked)
	got, err := q.Get(ctx, id)
	is.NoErr(err)
	is.Equal(got.State, lite.StateDone)
	var late int
	is.NoErr(q.DB().QueryRowContext(ctx, `select count(*) from lite_jobs where kind = 'late'`).Scan(&late))
	is.Equal(late, 0) // the enqueue that gave up wrote nothing
}
