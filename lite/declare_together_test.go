package lite_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// startDeclaration is what every process of one program declares at its
// start.
var startDeclaration = lite.Declaration{
	Owner:     "app",
	Schedules: []lite.Schedule{{Name: "tick", Spec: "@every 1m", Job: lite.NewJob{Queue: "s"}}},
	Retention: lite.Retention{Done: time.Hour},
	Limits:    map[string]lite.Limits{"a": {MaxRunning: 2}, "b": {Rate: 5, Per: time.Second}, "c": {MaxRunningPerKey: 1}},
}

// TestProcessesStartingTogetherAllDeclareTheirSettings starts 90
// processes at once (a queue each, with a pool of its own), half of them
// declaring the program's settings and half setting limits by hand on
// queues they share: every call succeeds. On PostgreSQL 52 to 81 of them
// failed as deadlocks, each change writing its rows before it locked
// lite_queues. Declaring the same settings again then writes nothing.
func TestProcessesStartingTogetherAllDeclareTheirSettings(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		first, dsn := e.open(t, lite.Options{})
		const processes = 90
		queues := make([]*lite.Queue, processes)
		queues[0] = first
		for i := 1; i < processes; i++ {
			queues[i] = mustOpenOpts(t, dsn, lite.Options{})
		}
		start := make(chan struct{})
		errs := make([]error, processes)
		var wg sync.WaitGroup
		for i, q := range queues {
			wg.Go(func() {
				<-start
				if i%2 == 0 {
					_, errs[i] = q.Declare(t.Context(), startDeclaration)
					return
				}
				errs[i] = q.SetLimits(t.Context(), fmt.Sprintf("hand%d", i%7), lite.Limits{MaxRunning: i})
			})
		}
		close(start)
		wg.Wait()
		failed := 0
		for i, err := range errs {
			if err != nil {
				failed++
				t.Logf("process %d: %v", i, err)
			}
		}
		is.Equal(failed, 0) // every process started

		out, err := first.Declare(t.Context(), startDeclaration)
		is.NoErr(err)
		is.Equal(out.Written, []string(nil)) // why: nothing changed, so nothing is written
		is.Equal(out.Held, []string(nil))
		is.Equal(out.Removed, []string(nil))
		is.Equal(out.Unchanged, []string{"schedule tick", "retention done", "limits a", "limits b", "limits c"})
	})
}

// TestADeclarationWaitsOutADeadlockWithAnAppsTransaction has an app's
// transaction on PostgreSQL hold a schedule's row and then read the
// queues' settings while a declaration that holds lite_queues waits for
// that row: the server ends one of them as a deadlock, and the
// declaration, ended so, runs again and succeeds.
func TestADeclarationWaitsOutADeadlockWithAnAppsTransaction(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	q, _ := e.open(t, lite.Options{})
	mustDeclare(t, q, startDeclaration)
	changed := startDeclaration
	changed.Schedules = []lite.Schedule{{Name: "tick", Spec: "@every 2m", Job: lite.NewJob{Queue: "s"}}}

	app, err := q.DB().BeginTx(ctx, nil)
	is.NoErr(err)
	defer app.Rollback()
	// The app checks for a deadlock late, so that the declaration, which
	// waits first and checks after the server's default second, is the
	// one the server ends.
	_, err = app.ExecContext(ctx, `set local deadlock_timeout = '10s'`)
	is.NoErr(err)
	_, err = app.ExecContext(ctx, `select name from lite_schedules where name = 'tick' for update`)
	is.NoErr(err)
	declared := make(chan error, 1)
	go func() {
		_, err := q.Declare(ctx, changed)
		declared <- err
	}()
	waitForALockWait(t, q, "insert into lite_schedules")
	_, appErr := app.ExecContext(ctx, `select count(*) from lite_queues`)
	is.NoErr(appErr) // the declaration was the one ended
	is.NoErr(app.Rollback())
	is.NoErr(<-declared) // and ran again
	s, err := q.Schedules(ctx)
	is.NoErr(err)
	is.Equal(s[0].Spec, "@every 2m")
}

// waitForALockWait waits until a session of the server waits for a lock
// in a statement that begins with prefix.
func waitForALockWait(t *testing.T, q *lite.Queue, prefix string) {
	t.Helper()
	for range 500 {
		var n int
		err := q.DB().QueryRowContext(t.Context(), `select count(*) from pg_stat_activity
where wait_event_type = 'Lock' and query like $1 || '%'`, prefix).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no session waited for a lock in %q", prefix)
}

// TestARedeclarationOfTheSameSettingsWritesNothing declares the same
// settings twice: the second writes nothing (the schedule keeps the time
// it was last written) and reports each setting unchanged. It reported
// each one written.
func TestARedeclarationOfTheSameSettingsWritesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.open(t, lite.Options{Now: clock.Now})
		out := mustDeclare(t, q, startDeclaration)
		is.Equal(len(out.Written), 5)
		updatedAt := func() (ms int64) {
			is.NoErr(q.DB().QueryRowContext(t.Context(), `select updated_at from lite_schedules where name = 'tick'`).Scan(&ms))
			return ms
		}
		before := updatedAt()
		clock.Advance(time.Minute)

		out = mustDeclare(t, q, startDeclaration)
		is.Equal(out.Written, []string(nil))
		is.Equal(out.Unchanged, []string{"schedule tick", "retention done", "limits a", "limits b", "limits c"})
		is.Equal(updatedAt(), before) // why: the schedule's row was not written

		changed := startDeclaration
		changed.Limits = map[string]lite.Limits{"a": {MaxRunning: 3}, "b": startDeclaration.Limits["b"], "c": startDeclaration.Limits["c"]}
		out = mustDeclare(t, q, changed)
		is.Equal(out.Written, []string{"limits a"}) // what changed is written, alone
	})
}
