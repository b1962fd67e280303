package lite_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestAWorkerWhoseConnectionsAreKilledComesBackAndItsStaleAckIsFenced
// kills every connection of a running worker's process on the server, as
// an admin or a failover does, while it holds a job: the worker reconnects
// by itself (its pool, and the listener that wakes it), nothing is lost,
// and once an admin gave its job to another host, its late ack is fenced.
func TestAWorkerWhoseConnectionsAreKilledComesBackAndItsStaleAckIsFenced(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	dsn := onPostgres(t).DSN(t)
	// The killed connections are found by their application name: other
	// tests share the server, and other hosts are not to be cut off.
	app := fmt.Sprintf("lite_killed_%d", time.Now().UnixNano())
	q := mustOpenOpts(t, dsn+"&application_name="+app, lite.Options{})
	other := mustOpenOpts(t, dsn, lite.Options{}) // another host: the admin, the enqueuer, the successor
	held := mustEnqueue(t, other, lite.NewJob{Kind: "held"})

	proceed := make(chan struct{})
	w, ev, _ := testWorker(t, q, lite.WorkerOptions{
		Concurrency: 4, HeartbeatInterval: 100 * time.Millisecond, StaleAfter: time.Second,
		// why: the poll is an hour away, so only the listener, which must
		// come back by itself, wakes the worker for the jobs enqueued later
		PollInterval: time.Hour,
	})
	w.Handle("held", func(ctx context.Context, _ *lite.Job) error {
		select {
		case <-proceed:
			lite.SetResult(ctx, []byte("A"))
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	w.Handle("quick", func(ctx context.Context, _ *lite.Job) error {
		lite.SetResult(ctx, []byte("A"))
		return nil
	})
	runWorker(t, w)
	a := ev.await(t, lite.EventStarted)
	is.Equal(a.JobID, held)

	// The listener connects on its own schedule: wait for it, so that it
	// is among the connections killed.
	for deadline := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		var listening bool
		is.NoErr(other.DB().QueryRowContext(ctx, `select exists (select from pg_stat_activity
where application_name = $1 and query like 'listen %')`, app).Scan(&listening))
		if listening {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never listened")
		}
	}
	var killed int
	is.NoErr(other.DB().QueryRowContext(ctx, `select count(pg_terminate_backend(pid)) from pg_stat_activity
where datname = current_database() and pid <> pg_backend_pid() and application_name = $1`, app).Scan(&killed))
	is.True(killed >= 2) // the listener and the pool's connections

	// While the worker is cut off, an admin gives its job to another host,
	// which finishes it.
	_, err := other.ReleaseUnowned(ctx, held)
	is.NoErr(err)
	jobs, err := other.Lease(ctx, lite.LeaseRequest{Kinds: []string{"held"}, LockedBy: "successor"})
	is.NoErr(err)
	is.Equal(len(jobs), 1)
	is.NoErr(other.AckDone(ctx, jobs[0].Lease(), []byte("B")))

	quick := map[int64]bool{}
	for range 10 {
		quick[mustEnqueue(t, other, lite.NewJob{Kind: "quick"})] = true
	}
	for done := 0; done < len(quick); {
		if j := ev.await(t, lite.EventDone); quick[j.JobID] {
			done++ // a job whose ack met a killed connection is reclaimed and done again
		}
	}

	close(proceed)
	// why: a heartbeat may have seen the loss already, while the test
	// waited for the other jobs; else the ack finds it now
	lost := func() *lite.Event {
		for _, e := range ev.seen() {
			if e.Kind == lite.EventLeaseLost && e.JobID == held {
				return &e
			}
		}
		return nil
	}
	for deadline := time.Now().Add(guard); lost() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker never learnt that it lost the held job")
		}
	}
	is.Equal(lost().Generation, a.Generation)
	// The successor's lease bumps it again, unless the lost-lease watch
	// saw the release's commit before that lease committed.
	cur := lost().CurrentGeneration
	is.True(cur == a.Generation+1 || cur == a.Generation+2) // released, then maybe leased by the successor
	j := mustGet(t, other, held)
	is.Equal(j.State, lite.StateDone)
	is.Equal(string(j.Result), "B") // the stale ack never landed
	is.Equal(j.LockedBy, "successor")
	for id := range quick {
		j := mustGet(t, other, id)
		is.Equal(j.State, lite.StateDone)
		is.Equal(string(j.Result), "A")
	}
}
