package lite_test

import (
	"context"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// A dependency's end on another host, under way while a retry of its
// dependent counts what that one waits for: the end had passed the edge
// still settled from the dependency's earlier death, so the count must
// not be made from the dependency's state before its end commits, or the
// dependent is left blocked for good. SQLite's one writer runs the two
// one after the other.
func TestARetryCountsADependencyWhoseEndIsUnderWayOnAnotherHost(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	q, _ := e.mustOpen(t, newFakeClock())
	a := mustEnqueue(t, q, lite.NewJob{MaxAttempts: 1})
	b := mustEnqueue(t, q, lite.NewJob{DependsOn: []int64{a}})
	mustDie(t, q, a) // b is cancelled, its edge settled
	is.Equal(stateOf(t, q, b), lite.StateCancelled)
	is.NoErr(q.Retry(t.Context(), a))
	leaseID(t, q, a)

	// Another host's ack of a, not yet committed: its triggers have run.
	host, err := q.DB().BeginTx(t.Context(), nil)
	is.NoErr(err)
	defer host.Rollback()
	var hostPID int
	is.NoErr(host.QueryRowContext(t.Context(), `select pg_backend_pid()`).Scan(&hostPID))
	_, err = host.ExecContext(t.Context(), `update lite_jobs set state = 'done', finished_at = 1 where id = $1 and state = 'running'`, a)
	is.NoErr(err)

	retried := make(chan error, 1)
	go func() { retried <- q.Retry(context.WithoutCancel(t.Context()), b) }()
	// The retry either returns (it did not wait for the end under way) or
	// waits for the host: only then does the host commit.
	for start := time.Now(); ; time.Sleep(time.Millisecond) { // polls for the wait, not for time to pass
		if len(retried) > 0 {
			break
		}
		var waiting bool
		is.NoErr(q.DB().QueryRowContext(t.Context(),
			`select exists (select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid)))`, hostPID).Scan(&waiting))
		if waiting {
			break
		}
		if time.Since(start) > guard {
			t.Fatal("the retry neither returned nor waited for the host")
		}
	}
	is.NoErr(host.Commit())
	select {
	case err := <-retried:
		is.NoErr(err)
	case <-time.After(guard):
		t.Fatal("the retry did not return once the host committed")
	}
	is.Equal(stateOf(t, q, a), lite.StateDone)
	is.Equal(stateOf(t, q, b), lite.StateAvailable) // counted: a's end, or the retry's look at a done
}
