package lite_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// freezingClock is a fake clock whose reads freeze once armed: the
// process reading it stops, inside whatever write it is making, until
// thaw.
type freezingClock struct {
	*fakeClock
	mu     sync.Mutex
	reads  int
	at     int           // the read that freezes; 0: none
	frozen chan struct{} // closed once a read froze
	thawed chan struct{}
}

func (c *freezingClock) now() time.Time {
	c.mu.Lock()
	c.reads++
	freeze := c.reads == c.at
	frozen, thawed := c.frozen, c.thawed
	c.mu.Unlock()
	if freeze {
		close(frozen)
		<-thawed
	}
	return c.Now()
}

// freezeAt freezes the n-th read from now on; the returned thaw lets it go.
func (c *freezingClock) freezeAt(n int) (frozen <-chan struct{}, thaw func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.frozen, c.thawed = c.reads+n, make(chan struct{}), make(chan struct{})
	thawed := c.thawed
	var once sync.Once
	return c.frozen, func() { once.Do(func() { close(thawed) }) }
}

func (c *freezingClock) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// holder takes a lock that job's heartbeat needs, from another
// connection or process on dsn, and returns what lets it go.
type holder struct {
	name string
	hold func(t *testing.T, e testEngine, dsn string, clock *fakeClock, job int64) (release func())
}

// dependent is a workflow with a step that waits for job: its enqueue
// locks job's row on a server, and the file on SQLite, until it commits.
func dependent(job int64) lite.Workflow {
	return lite.Workflow{Steps: []lite.Step{
		{Name: "after", Job: lite.NewJob{Queue: "b", DependsOn: []int64{job}}},
		{Name: "then", Job: lite.NewJob{Queue: "b"}},
	}}
}

var lockHolders = []holder{
	{"lite's own workflow enqueue whose steps wait for the running job", func(t *testing.T, e testEngine, dsn string, clock *fakeClock, job int64) func() {
		qc := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		tx := mustBegin(t, qc)
		if _, err := qc.EnqueueWorkflowTx(t.Context(), tx, dependent(job)); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Commit() }
	}},
	{"an app's own transaction", func(t *testing.T, e testEngine, dsn string, clock *fakeClock, job int64) func() {
		if e.name != "postgres" {
			h := holdLeaseLock(t, e, dsn, "", "")
			return func() { h.tx.Rollback() }
		}
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		tx, err := db.BeginTx(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(t.Context(), `select from lite_jobs where id = $1 for share`, job); err != nil {
			t.Fatal(err)
		}
		return func() { tx.Rollback() }
	}},
	{"a process frozen inside its write", func(t *testing.T, e testEngine, dsn string, clock *fakeClock, job int64) func() {
		c := &freezingClock{fakeClock: clock}
		qc := mustOpenOpts(t, dsn, lite.Options{Now: c.now})
		// Count the clock's reads of one enqueue, then freeze the next
		// one at its last read: by then it holds the file, or job's row.
		before := c.count()
		if _, err := qc.EnqueueWorkflow(t.Context(), dependent(job)); err != nil {
			t.Fatal(err)
		}
		frozen, thaw := c.freezeAt(c.count() - before)
		done := make(chan error, 1)
		go func() {
			_, err := qc.EnqueueWorkflow(context.WithoutCancel(t.Context()), dependent(job))
			done <- err
		}()
		<-frozen
		t.Cleanup(thaw)
		return func() {
			thaw()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}},
}

// TestALockWaitIsNeverAnOwnersSilence holds a lock that a running job's
// heartbeat needs for longer than the job's stale-after, while its worker
// goes on (or would go on) beating, with each kind of holder: no reclaim
// takes the job. Once the lock is free and the worker truly stops, it is
// taken. On a server the reclaim waited behind the job's row and its
// heartbeat, once it landed, stored the time from before its wait; on a
// file a reclaimer that had waited behind two long writes in a row
// counted only the latest wait out of the job's silence and took it
// (with stale-after 1 s, 3 of 6 and 7 of 15 runs of a job ran twice).
func TestALockWaitIsNeverAnOwnersSilence(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, h := range lockHolders {
			t.Run(h.name, func(t *testing.T) {
				if e.name == "postgres" {
					lockWaitOnAServer(t, e, h)
				} else {
					lockWaitOnAFile(t, h)
				}
			})
		}
	})
}

// ownerOf opens a queue on e, enqueues a job and leases it under a worker
// row promising staleAfter; it returns a second queue on the same
// database, another process, for the reclaims.
func ownerOf(t *testing.T, e testEngine, clock *fakeClock, reclaimerNow func() time.Time, staleAfter time.Duration) (
	owner, reclaimer *lite.Queue, dsn string, row *lite.WorkerRow, lease lite.Lease) {
	t.Helper()
	is := is.New(t)
	ctx := t.Context()
	owner, dsn = e.mustOpen(t, clock)
	reclaimer = mustOpenOpts(t, dsn, lite.Options{Now: reclaimerNow})
	id := mustEnqueue(t, owner, lite.NewJob{Queue: "a"})
	row, err := lite.AnnounceWorker(ctx, owner, staleAfter)
	is.NoErr(err)
	jobs, err := row.Lease(ctx, lite.LeaseRequest{Queues: []string{"a"}, StaleAfter: staleAfter})
	is.NoErr(err)
	is.Equal(len(jobs), 1)
	is.Equal(jobs[0].ID, id)
	return owner, reclaimer, dsn, row, jobs[0].Lease()
}

// lockWaitOnAServer: the job's heartbeat waits behind its row, the worker's
// row beats on, and a reclaim neither waits nor takes the job.
func lockWaitOnAServer(t *testing.T, e testEngine, h holder) {
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	const staleAfter = 3 * time.Second
	clock := newFakeClock()
	owner, reclaimer, dsn, row, lease := ownerOf(t, e, clock, clock.Now, staleAfter)
	release := h.hold(t, e, dsn, clock, lease.JobID)
	renewed := make(chan error, 1)
	go func() {
		_, err := owner.Renew(ctx, []lite.Lease{lease})
		renewed <- err
	}()
	waitForRowWaiter(t, reclaimer)
	clock.Advance(4 * time.Second)
	is.NoErr(row.Seen(ctx)) // why: the worker's own row is locked by no transaction over jobs

	reclaimed := make(chan []lite.Reclaimed, 1)
	go func() {
		r, err := reclaimer.ReclaimOrphaned(ctx)
		if err != nil {
			t.Error(err)
		}
		reclaimed <- r
	}()
	select {
	case r := <-reclaimed:
		is.Equal(len(r), 0) // why: the job's heartbeat waited for a lock while its worker beat on
		release()
	case <-time.After(5 * time.Second):
		release()
		<-reclaimed
		t.Fatal("the reclaim waited behind the job's row lock")
	}
	is.NoErr(<-renewed)

	clock.Advance(staleAfter)
	r, err := reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 0) // why: the worker's row is not yet silent past its promise
	clock.Advance(time.Millisecond)
	r, err = reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 1) // why: the job and its worker both went silent: the owner is dead
}

// waitForRowWaiter returns once a statement on the server waits for a
// session that holds a lock on q's lite_jobs (the server is shared: other
// tests' waits do not count).
func waitForRowWaiter(t *testing.T, q *lite.Queue) {
	t.Helper()
	for range 1000 {
		var waiting int
		if err := q.DB().QueryRowContext(t.Context(), `select count(*) from pg_locks w where not w.granted and exists (
    select from pg_locks h where h.granted and h.relation = 'lite_jobs'::regclass and h.pid = any(pg_blocking_pids(w.pid)))`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond) // polls for the waiter; passes no fake time
	}
	t.Fatal("the heartbeat never waited for the job's row")
}

// lockWaitOnAFile: the file is held twice in a row, longer than the job's
// stale-after each time, while the reclaiming process waits for it; the
// owner's beats have not landed yet when the reclaim runs, which counts
// both waits out.
func lockWaitOnAFile(t *testing.T, h holder) {
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	const staleAfter = 1500 * time.Millisecond
	clock := newClockReads()
	owner, reclaimer, dsn, row, lease := ownerOf(t, sqliteEngine, clock.fakeClock, clock.now, staleAfter)
	for range 2 {
		release := h.hold(t, sqliteEngine, dsn, clock.fakeClock, lease.JobID)
		clock.arm()
		wrote := make(chan error, 1)
		go func() { // a write of the reclaiming process, waiting for the file
			_, err := reclaimer.Renew(ctx, []lite.Lease{{JobID: lease.JobID + 1000, Generation: 1}})
			wrote <- err
		}()
		<-clock.read
		clock.Advance(2 * time.Second)
		release()
		is.NoErr(<-wrote)
		clock.Advance(time.Millisecond)
	}
	r, err := reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 0) // why: the job was silent only while the file was held

	is.NoErr(row.Seen(ctx))
	_, err = owner.Renew(ctx, []lite.Lease{lease})
	is.NoErr(err)
	clock.Advance(staleAfter)
	r, err = reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 0) // why: not yet silent past its promise
	clock.Advance(time.Millisecond)
	r, err = reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 1) // why: the job and its worker both went silent: the owner is dead
}

// TestAReclaimSkipsARowAnotherTransactionHolds: on PostgreSQL a reclaim
// takes the dead owners' jobs it can lock and skips one whose row another
// transaction holds, rather than wait behind it; one that waited stalled
// its host for as long as the other transaction ran (or failed at the
// server's bound, reclaiming nothing). The skipped job is taken once its
// row is free.
func TestAReclaimSkipsARowAnotherTransactionHolds(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	const staleAfter = time.Second
	clock := newFakeClock()
	q, dsn := e.mustOpen(t, clock)
	held := mustEnqueue(t, q, lite.NewJob{Queue: "a"})
	free := mustEnqueue(t, q, lite.NewJob{Queue: "a"})
	row, err := lite.AnnounceWorker(ctx, q, staleAfter)
	is.NoErr(err)
	jobs, err := row.Lease(ctx, lite.LeaseRequest{Queues: []string{"a"}, StaleAfter: staleAfter, Max: 2})
	is.NoErr(err)
	is.Equal(len(jobs), 2)
	clock.Advance(2 * staleAfter) // the jobs and their worker's row went silent: the owner is dead
	release := lockHolders[1].hold(t, e, dsn, clock, held)

	reclaimed := make(chan []lite.Reclaimed, 1)
	go func() {
		r, err := q.ReclaimOrphaned(ctx)
		if err != nil {
			t.Error(err)
		}
		reclaimed <- r
	}()
	select {
	case r := <-reclaimed:
		is.Equal(len(r), 1)
		is.Equal(r[0].JobID, free) // why: the held row is skipped, not waited for
	case <-time.After(5 * time.Second):
		release()
		<-reclaimed
		t.Fatal("the reclaim waited behind a row another transaction holds")
	}
	release()
	r, err := q.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 1)
	is.Equal(r[0].JobID, held) // why: once its row is free, the dead owner's job is taken
}

// TestAHeartbeatThatWaitedRecordsWhenItLanded holds a job's row on
// PostgreSQL while its heartbeat waits for it: the heartbeat stores the
// time it landed, not the time it was sent. It stored the time read
// before the wait, which a reclaim of another process counted as silence.
func TestAHeartbeatThatWaitedRecordsWhenItLanded(t *testing.T) {
	e := onPostgres(t)
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	clock := newFakeClock() // stands still: the time that passes is the wait's
	q, dsn := e.mustOpen(t, clock)
	mustEnqueue(t, q, lite.NewJob{Queue: "a"})
	j := mustLeaseOne(t, q, "a")
	release := lockHolders[1].hold(t, e, dsn, clock, j.ID)
	renewed := make(chan error, 1)
	go func() {
		_, err := q.Renew(ctx, []lite.Lease{j.Lease()})
		renewed <- err
	}()
	waitForRowWaiter(t, q)
	const held = 300 * time.Millisecond
	time.Sleep(held) // the wait is the server's real time, which no fake clock moves
	release()
	is.NoErr(<-renewed)
	beat := mustGet(t, q, j.ID).HeartbeatAt
	is.True(beat.Sub(clock.Now()) >= held) // why: the heartbeat landed once the row was free
}

// TestAWorkersRowKeepsItsJobsAlive lets a job's own heartbeat lapse while
// its worker's row beats on (the job's renewal is stuck behind a lock,
// wherever): no reclaim takes it, and once the row lapses too, or is
// gone, a reclaim does. A lease with no row is judged by its heartbeat.
func TestAWorkersRowKeepsItsJobsAlive(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		const staleAfter = 3 * time.Second
		// silentJob is a job whose own heartbeat lapsed while its
		// worker's row beat on.
		silentJob := func(t *testing.T) (clock *fakeClock, reclaimer *lite.Queue, row *lite.WorkerRow) {
			clock = newFakeClock()
			_, reclaimer, _, row, _ = ownerOf(t, e, clock, clock.Now, staleAfter)
			clock.Advance(2 * staleAfter)
			if err := row.Seen(t.Context()); err != nil {
				t.Fatal(err)
			}
			return clock, reclaimer, row
		}
		t.Run("a job whose worker beats is not taken, and is once the worker stops", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			clock, reclaimer, _ := silentJob(t)
			r, err := reclaimer.ReclaimOrphaned(ctx)
			is.NoErr(err)
			is.Equal(len(r), 0) // why: its worker beat within its promise
			clock.Advance(staleAfter + time.Millisecond)
			r, err = reclaimer.ReclaimOrphaned(ctx)
			is.NoErr(err)
			is.Equal(len(r), 1) // why: the worker went silent too
		})
		t.Run("a job of the reclaiming worker's own that it does not hold is taken", func(t *testing.T) {
			is := is.New(t)
			_, reclaimer, row := silentJob(t)
			r, err := lite.ReclaimAs(t.Context(), reclaimer, row)
			is.NoErr(err)
			is.Equal(len(r), 1) // why: its row is alive, but it runs no such lease (one whose answer it lost)
		})
		t.Run("a job whose worker's row is gone is taken", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			clock := newFakeClock()
			_, reclaimer, _, _, _ := ownerOf(t, e, clock, clock.Now, staleAfter)
			_, err := reclaimer.DB().ExecContext(ctx, `delete from lite_workers`)
			is.NoErr(err)
			clock.Advance(staleAfter + time.Millisecond)
			r, err := reclaimer.ReclaimOrphaned(ctx)
			is.NoErr(err)
			is.Equal(len(r), 1)
		})
	})
}

// TestAReclaimThatWaitedForTheFileTakesNothing holds the file while a
// job's owner cannot beat, and only later lets a reclaim of a process
// that saw none of it wait for the file too: that reclaim takes nothing,
// since it cannot know since when the owners waited; the next one, once
// they beat, judges them. It took the job, counting the time before its
// own wait as silence.
func TestAReclaimThatWaitedForTheFileTakesNothing(t *testing.T) {
	is := is.New(t)
	ctx := context.WithoutCancel(t.Context())
	const staleAfter = 1500 * time.Millisecond
	clock := newClockReads()
	owner, reclaimer, dsn, row, lease := ownerOf(t, sqliteEngine, clock.fakeClock, clock.now, staleAfter)
	h := holdLeaseLock(t, sqliteEngine, dsn, "", "")
	clock.Advance(2 * time.Second) // the owner's beats wait meanwhile, in its own process
	var r []lite.Reclaimed
	h.whileWaiting(t, sqliteEngine, clock, 2*time.Second, h.tx.Rollback, func() (err error) {
		r, err = reclaimer.ReclaimOrphaned(ctx)
		return err
	})
	is.Equal(len(r), 0) // why: the file was held since before the reclaim waited
	is.NoErr(row.Seen(ctx))
	_, err := owner.Renew(ctx, []lite.Lease{lease})
	is.NoErr(err)
	r, err = reclaimer.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 0) // why: the owner beat once the file was free
}

// A worker's announcement is a write like any other: a worker that starts
// while the file is held waits for it there, and its reclaims count that
// wait out of every job's silence (the shell attacker's frozen enqueue:
// a worker started during it took a healthy job once it let go).
func TestAnAnnouncementsWaitForTheFileIsNotSilence(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	const staleAfter = 3 * time.Second
	clock := newFakeClock()
	_, _, dsn, _, _ := ownerOf(t, sqliteEngine, clock, clock.Now, staleAfter)
	c := &freezingClock{fakeClock: clock}
	late := mustOpenOpts(t, dsn, lite.Options{Now: c.now})
	h := holdLeaseLock(t, sqliteEngine, dsn, "", "")
	before := c.count()
	announced := make(chan error, 1)
	go func() {
		_, err := lite.AnnounceWorker(context.WithoutCancel(ctx), late, staleAfter)
		announced <- err
	}()
	for c.count() == before { // until it is waiting: the next read comes once it holds the lock
		time.Sleep(time.Millisecond)
	}
	clock.Advance(3 * staleAfter)
	is.NoErr(h.tx.Rollback())
	is.NoErr(<-announced)
	r, err := late.ReclaimOrphaned(ctx)
	is.NoErr(err)
	is.Equal(len(r), 0) // why: every beat of the job's owner waited as long as this announcement did
}
