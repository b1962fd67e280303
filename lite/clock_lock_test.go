package lite_test

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// lockHolder is another connection holding the write lock a lease needs:
// on a file a second *sql.DB in BEGIN IMMEDIATE, on a server a
// transaction holding queue's lite_queues row, which a lease of a limited
// queue locks first. Its setup statement runs while it holds the lock.
type lockHolder struct {
	db *sql.DB
	tx *sql.Tx
}

func holdLeaseLock(t *testing.T, e testEngine, dsn, queue, setup string) *lockHolder {
	t.Helper()
	is := is.New(t)
	driver, source := "sqlite", "file:"+dsn+"?_txlock=immediate"
	if e.name == "postgres" {
		driver, source = "pgx", dsn
	}
	db, err := sql.Open(driver, source)
	is.NoErr(err)
	t.Cleanup(func() { db.Close() })
	tx, err := db.BeginTx(t.Context(), nil)
	is.NoErr(err)
	t.Cleanup(func() { tx.Rollback() })
	if e.name == "postgres" {
		_, err = tx.ExecContext(t.Context(), `select from lite_queues where queue = $1 for update`, queue)
		is.NoErr(err)
	}
	if setup != "" {
		_, err = tx.ExecContext(t.Context(), setup)
		is.NoErr(err)
	}
	return &lockHolder{db: db, tx: tx}
}

// waitForWaiter returns once the write started in the background waits
// for h's lock. A server shows the waiting lock; a file shows no waiter,
// so there it returns once the write has read the clock (a write that
// reads it before the lock), or after a moment to reach the lock. Either
// way, a write that reads the clock only once it holds the lock reads it
// after the test moves the clock on, whenever it got to the lock.
func (h *lockHolder) waitForWaiter(t *testing.T, e testEngine, read <-chan struct{}) {
	t.Helper()
	if e.name != "postgres" {
		select {
		case <-read:
		case <-time.After(time.Second):
		}
		return
	}
	for range 1000 {
		var waiting int
		err := h.db.QueryRowContext(t.Context(), `select count(*) from pg_locks where not granted`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // polls for the waiter; passes no fake time
	}
	t.Fatal("the write never waited for the lock")
}

// whileWaiting runs write in the background while h holds its lock, moves
// clock on by d once write waits for the lock, ends h's transaction with
// end (its Commit or Rollback), and returns the time clock read then,
// once write has returned.
func (h *lockHolder) whileWaiting(t *testing.T, e testEngine, clock *clockReads, d time.Duration, end func() error, write func() error) time.Time {
	t.Helper()
	clock.arm()
	wrote := make(chan error, 1)
	go func() { wrote <- write() }()
	h.waitForWaiter(t, e, clock.read)
	clock.Advance(d)
	taken := clock.Now()
	if err := end(); err != nil {
		t.Fatal(err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	return taken
}

// clockReads is a fake clock that reports its first read after arm.
type clockReads struct {
	*fakeClock
	read  chan struct{}
	armed chan struct{}
}

func newClockReads() *clockReads {
	return &clockReads{fakeClock: newFakeClock(), read: make(chan struct{}, 1), armed: make(chan struct{}, 1)}
}

func (c *clockReads) arm() { c.armed <- struct{}{} }

// now reports a read once it has the time, so a test that moves the
// clock on the report never moves the reading it reports.
func (c *clockReads) now() time.Time {
	now := c.Now()
	select {
	case <-c.armed:
		c.read <- struct{}{}
	default:
	}
	return now
}

// openLimited opens a queue on e whose queue "a" has limits l (so that a
// lease of it on a server locks its row), with a clock that reports reads.
func openLimited(t *testing.T, e testEngine, l lite.Limits) (*lite.Queue, string, *clockReads) {
	t.Helper()
	clock := newClockReads()
	q, dsn := e.open(t, lite.Options{Now: clock.now})
	if err := q.SetLimits(t.Context(), "a", l); err != nil {
		t.Fatal(err)
	}
	return q, dsn, clock
}

// TestALeaseReadsTheClockOnceItsLockIsHeld starts a lease while another
// connection holds the lock it needs, moves the clock past the lease's
// stale-after while it waits, then lets it go: the lease's heartbeat is
// the time it took the job, so a reclaim then takes nothing. Read before
// the wait, the clock made the lease commit lapsed, and a reclaim from any
// process took the job from its live worker.
func TestALeaseReadsTheClockOnceItsLockIsHeld(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, dsn, clock := openLimited(t, e, lite.Limits{MaxRunning: 4})
		mustEnqueue(t, q, lite.NewJob{Queue: "a"})

		h := holdLeaseLock(t, e, dsn, "a", "")
		var jobs []*lite.Job
		// The clock moves on past the lease's stale-after while it waits.
		taken := h.whileWaiting(t, e, clock, 4*time.Second, h.tx.Rollback, func() (err error) {
			jobs, err = q.Lease(context.WithoutCancel(ctx), lite.LeaseRequest{Queues: []string{"a"}, StaleAfter: 3 * time.Second})
			return err
		})
		is.Equal(len(jobs), 1)
		is.True(jobs[0].HeartbeatAt.Equal(taken)) // why: the lease's time is when it held the lock
		reclaimed, err := q.ReclaimOrphaned(ctx)
		is.NoErr(err)
		is.Equal(len(reclaimed), 0) // why: a lease just taken is not lapsed
	})
}

// TestALeaseThatWaitedCountsItsStartsInTheWindowAFresherLeaseOpened has
// a rate of 3 an hour whose window another writer opens (and spends)
// while a lease waits for its lock: the lease, its time read after the
// wait, finds the window spent and starts nothing. With its time read
// before, it took the window for one a clock stepped back left behind and
// started up to 3 more.
func TestALeaseThatWaitedCountsItsStartsInTheWindowAFresherLeaseOpened(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, dsn, clock := openLimited(t, e, lite.Limits{Rate: 3, Per: time.Hour})
		for range 6 {
			mustEnqueue(t, q, lite.NewJob{Queue: "a"})
		}

		// The fresher lease's effect, committed while the lease waits: a
		// window opened 2 s on, its 3 starts spent.
		opened := clock.Now().Add(2 * time.Second).UnixMilli()
		h := holdLeaseLock(t, e, dsn, "a", "update lite_queues set window_start = "+strconv.FormatInt(opened, 10)+", window_starts = 3 where queue = 'a'")
		var jobs []*lite.Job
		h.whileWaiting(t, e, clock, 3*time.Second, h.tx.Commit, func() (err error) {
			jobs, err = q.Lease(context.WithoutCancel(ctx), lite.LeaseRequest{Queues: []string{"a"}, Max: 3})
			return err
		})
		is.Equal(len(jobs), 0) // why: the window's 3 starts are spent
	})
}

// TestAWriteReadsTheClockOnceTheFilesLockIsHeld runs each owner and admin
// write while another connection holds the file's write lock, moves the
// clock on while it waits, then lets it go: the time it stored is the
// time it took the lock. (On a server these are single statements that
// wait for no lock of lite's.)
func TestAWriteReadsTheClockOnceTheFilesLockIsHeld(t *testing.T) {
	const later = 4 * time.Second
	for _, c := range []struct {
		name string
		// write is made under the held lock; stored reads back the time it
		// wrote, from the job as it is now or from q.
		write  func(ctx context.Context, q *lite.Queue, j *lite.Job) error
		stored func(q *lite.Queue, j *lite.Job) time.Time
	}{
		{"a schedule counts its first tick from the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			return q.SetSchedule(ctx, lite.Schedule{Name: "s", Spec: "@every 1m"})
		}, func(q *lite.Queue, _ *lite.Job) time.Time {
			scheds, err := q.Schedules(context.Background())
			if err != nil || len(scheds) != 1 {
				return time.Time{}
			}
			return scheds[0].NextRunAt.Add(-time.Minute)
		}},
		{"a renewal stores the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			res, err := q.Renew(ctx, []lite.Lease{j.Lease()})
			if err == nil {
				err = res[0]
			}
			return err
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.HeartbeatAt }},
		{"an ack stores the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			return q.AckDone(ctx, j.Lease(), nil)
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.FinishedAt }},
		{"a group of acks stores the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			res, err := q.AckDoneMany(ctx, []lite.Done{{Lease: j.Lease()}})
			if err == nil {
				err = res[0]
			}
			return err
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.FinishedAt }},
		{"a failed ack retries from the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			return q.AckFailed(ctx, j.Lease(), lite.Permanent(context.Canceled))
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.FinishedAt }},
		{"a snooze counts its delay from the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			return q.Snooze(ctx, j.Lease(), 0)
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.RunAt }},
		{"a cancel stores the time it took the lock", func(ctx context.Context, q *lite.Queue, j *lite.Job) error {
			return q.Cancel(ctx, j.ID)
		}, func(_ *lite.Queue, j *lite.Job) time.Time { return j.FinishedAt }},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			clock := newClockReads()
			q, path := sqliteEngine.open(t, lite.Options{Now: clock.now})
			mustEnqueue(t, q, lite.NewJob{})
			j := mustLeaseOne(t, q, lite.DefaultQueue)

			h := holdLeaseLock(t, sqliteEngine, path, "", "")
			taken := h.whileWaiting(t, sqliteEngine, clock, later, h.tx.Rollback, func() error {
				return c.write(context.WithoutCancel(ctx), q, j)
			})
			is.True(c.stored(q, mustGet(t, q, j.ID)).Equal(taken)) // why: the write's time is when it held the lock
		})
	}
}

// TestAWaitForTheLockIsNotCountedAsAWorkersSilence holds the lock a job's
// heartbeat needs (an app's long transaction) past the job's stale-after
// while a write of the worker's process waits for it: neither the next
// reclaim nor the one after it takes the job, for its silence was the
// wait; once it stays silent past its stale-after after the wait, it is
// taken. On a file the reclaim that waited took the job from its live
// worker, which ran it twice (two workers, an app transaction of 2 s,
// stale-after 300 ms); on a server the heartbeat that waited for the job's
// row landed with the time from before its wait, lapsed.
func TestAWaitForTheLockIsNotCountedAsAWorkersSilence(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, c := range []struct {
			name string
			// notOnServer, if set, is why a server never makes this wait.
			notOnServer string
			wait        func(ctx context.Context, q *lite.Queue, l lite.Lease) ([]lite.Reclaimed, error)
		}{
			{"a reclaim that waited takes no job whose worker waited too", "a server's reclaim locks only the rows it takes, so it waits for no live job's row", func(ctx context.Context, q *lite.Queue, _ lite.Lease) ([]lite.Reclaimed, error) {
				return q.ReclaimOrphaned(ctx)
			}},
			{"a heartbeat that waited is not lapsed", "", func(ctx context.Context, q *lite.Queue, l lite.Lease) ([]lite.Reclaimed, error) {
				errs, err := q.Renew(ctx, []lite.Lease{l})
				return nil, errors.Join(err, errs[0])
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				if e.name == "postgres" && c.notOnServer != "" {
					t.Skip(c.notOnServer)
				}
				is := is.New(t)
				ctx := t.Context()
				clock := newClockReads()
				q, dsn := e.open(t, lite.Options{Now: clock.now})
				mustEnqueue(t, q, lite.NewJob{Queue: "a"})
				jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"a"}, StaleAfter: 3 * time.Second})
				is.NoErr(err)
				is.Equal(len(jobs), 1)

				setup := ""
				if e.name == "postgres" {
					setup = `select from lite_jobs for update` // the row a heartbeat writes
				}
				h := holdLeaseLock(t, e, dsn, "a", setup)
				var reclaimed []lite.Reclaimed
				h.whileWaiting(t, e, clock, 4*time.Second, h.tx.Commit, func() (err error) {
					reclaimed, err = c.wait(context.WithoutCancel(ctx), q, jobs[0].Lease())
					return err
				})
				is.Equal(len(reclaimed), 0) // why: the job was silent only while the write waited
				for range 2 {
					reclaimed, err = q.ReclaimOrphaned(ctx)
					is.NoErr(err)
					is.Equal(len(reclaimed), 0) // why: the reclaims after it, before a late heartbeat lands, count the wait out too
				}

				clock.Advance(3 * time.Second)
				reclaimed, err = q.ReclaimOrphaned(ctx)
				is.NoErr(err)
				is.Equal(len(reclaimed), 0) // why: 3 s of silence after the wait is not past the stale-after
				clock.Advance(time.Millisecond)
				reclaimed, err = q.ReclaimOrphaned(ctx)
				is.NoErr(err)
				is.Equal(len(reclaimed), 1) // why: a worker silent past its stale-after once the lock was free is dead
			})
		}
	})
}
