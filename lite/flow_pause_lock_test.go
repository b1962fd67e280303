package lite_test

import (
	"context"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestAPauseWaitsForNoAppTransaction holds an app's transaction open on
// PostgreSQL after it enqueued a job, and pauses another queue: the pause
// returns at once, and heartbeats, acks and leases of other queues go on.
// A pause that locked lite_jobs waited for the app's commit, and every
// host's writes queued behind it, so leases lapsed meanwhile.
func TestAPauseWaitsForNoAppTransaction(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	q, _ := onPostgres(t).mustOpen(t, newFakeClock())
	mustEnqueue(t, q, lite.NewJob{Queue: "b"})
	mustEnqueue(t, q, lite.NewJob{Queue: "b"})
	running := mustLeaseOne(t, q, "b")

	app, err := q.DB().BeginTx(ctx, nil)
	is.NoErr(err)
	defer app.Rollback()
	_, err = q.EnqueueTx(ctx, app, lite.NewJob{Queue: "a"})
	is.NoErr(err)

	paused := make(chan error, 1)
	go func() { paused <- q.Pause(context.WithoutCancel(ctx), "other") }()
	select {
	case err := <-paused:
		is.NoErr(err)
	case <-time.After(10 * time.Second):
		app.Rollback() // let the pause end, then fail
		<-paused
		t.Fatal("the pause waited for the app's open transaction")
	}
	results, err := q.Renew(ctx, []lite.Lease{running.Lease()})
	is.NoErr(err)
	is.NoErr(results[0])
	is.NoErr(q.AckDone(ctx, running.Lease(), nil))
	jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"b"}})
	is.NoErr(err)
	is.Equal(len(jobs), 1) // why: a lease of another queue goes on while the app's transaction is open
	is.NoErr(app.Commit())
}
