package lite_test

import (
	"bytes"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// finishedJobs makes one done, one cancelled and one dead job, finished
// now, and one available and one running job, which no retention touches.
type finishedJobs struct{ done, cancelled, dead, available, running int64 }

func makeFinishedJobs(t *testing.T, q *lite.Queue) finishedJobs {
	t.Helper()
	is := is.New(t)
	ctx := t.Context()
	var f finishedJobs
	f.done = mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), nil))
	f.dead = mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 1})
	is.NoErr(q.AckFailed(ctx, mustLeaseOne(t, q, "q").Lease(), errors.New("boom")))
	f.running = mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	mustLeaseOne(t, q, "q")
	f.cancelled = mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	is.NoErr(q.Cancel(ctx, f.cancelled))
	f.available = mustEnqueue(t, q, lite.NewJob{Queue: "other"})
	return f
}

// exists reports whether job id is still in the queue.
func exists(t *testing.T, q *lite.Queue, id int64) bool {
	t.Helper()
	_, err := q.Get(t.Context(), id)
	if err != nil && !errors.Is(err, lite.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func mustClean(t *testing.T, q *lite.Queue) lite.CleanReport {
	t.Helper()
	rep, err := q.Clean(t.Context())
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return rep
}

func TestCleanDeletesEachStateOnlyAfterItsOwnAge(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		f := makeFinishedJobs(t, q)
		unfinished := func() {
			t.Helper()
			is.True(exists(t, q, f.available)) // no retention deletes an available job
			is.True(exists(t, q, f.running))   // nor a running one
		}

		clock.Advance(lite.DefaultRetainDone - time.Millisecond)
		is.Equal(mustClean(t, q).Deleted, int64(0)) // a millisecond short of a day: everything kept
		is.True(exists(t, q, f.done))
		is.True(exists(t, q, f.cancelled))
		unfinished()

		clock.Advance(time.Millisecond)
		is.Equal(mustClean(t, q).Deleted, int64(2))
		is.True(!exists(t, q, f.done))      // a day old: gone
		is.True(!exists(t, q, f.cancelled)) // likewise
		is.True(exists(t, q, f.dead))       // dead jobs are kept a week
		unfinished()

		clock.Advance(lite.DefaultRetainDead - lite.DefaultRetainDone - time.Millisecond)
		is.Equal(mustClean(t, q).Deleted, int64(0))
		is.True(exists(t, q, f.dead))
		clock.Advance(time.Millisecond)
		is.Equal(mustClean(t, q).Deleted, int64(1))
		is.True(!exists(t, q, f.dead))
		unfinished()
	})
}

func TestCleanFollowsTheRetentionSet(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: lite.KeepForever, Cancelled: time.Hour, Dead: 2 * time.Hour}))
		f := makeFinishedJobs(t, q)

		clock.Advance(time.Hour)
		is.Equal(mustClean(t, q).Deleted, int64(1))
		is.True(!exists(t, q, f.cancelled)) // an hour, as set
		is.True(exists(t, q, f.dead))       // two hours, as set
		clock.Advance(time.Hour)
		is.Equal(mustClean(t, q).Deleted, int64(1))
		is.True(!exists(t, q, f.dead))
		clock.Advance(10 * 365 * 24 * time.Hour)
		is.Equal(mustClean(t, q).Deleted, int64(0))
		is.True(exists(t, q, f.done)) // KeepForever keeps
		is.True(exists(t, q, f.available))
		is.True(exists(t, q, f.running))
	})
}

func TestRetentionLivesInTheDatabase(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		r, err := q.Retention(ctx)
		is.NoErr(err)
		is.Equal(r, lite.Retention{Done: 24 * time.Hour, Cancelled: 24 * time.Hour, Dead: 7 * 24 * time.Hour}) // the defaults

		set := lite.Retention{Done: lite.KeepForever, Cancelled: 90 * time.Minute, Dead: 30 * 24 * time.Hour}
		is.NoErr(q.SetRetention(ctx, set))
		other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now}) // another process, with no settings of its own
		r, err = other.Retention(ctx)
		is.NoErr(err)
		is.Equal(r, set)

		// A second process cleans by the file's policy, not by defaults.
		done := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), nil))
		clock.Advance(2 * lite.DefaultRetainDone)
		is.Equal(mustClean(t, other).Deleted, int64(0))
		is.True(exists(t, q, done))

		// A zero field goes back to its default.
		is.NoErr(other.SetRetention(ctx, lite.Retention{Cancelled: 90 * time.Minute}))
		r, err = q.Retention(ctx)
		is.NoErr(err)
		is.Equal(r, lite.Retention{Done: lite.DefaultRetainDone, Cancelled: 90 * time.Minute, Dead: lite.DefaultRetainDead})
		is.Equal(mustClean(t, other).Deleted, int64(1))
		is.True(!exists(t, q, done))
	})
}

func TestSetRetentionRefusesWhatIsNoAgeAndChangesNothing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ctx := t.Context()
		q, _ := e.mustOpen(t, nil)
		set := lite.Retention{Done: time.Hour, Cancelled: 2 * time.Hour, Dead: 3 * time.Hour}
		is.New(t).NoErr(q.SetRetention(ctx, set))
		for _, bad := range []lite.Retention{
			{Done: time.Minute, Cancelled: time.Minute, Dead: -time.Hour},
			{Done: time.Microsecond, Cancelled: time.Minute, Dead: time.Minute},
		} {
			t.Run("retention "+bad.Done.String()+" "+bad.Dead.String()+" is refused", func(t *testing.T) {
				is := is.New(t)
				is.True(errors.Is(q.SetRetention(ctx, bad), lite.ErrInvalid))
				r, err := q.Retention(ctx)
				is.NoErr(err)
				is.Equal(r, set) // nothing changed, not even the valid fields
			})
		}
	})
}

// finishMany makes n done jobs with payloads of size bytes, finished now.
func finishMany(t testing.TB, q *lite.Queue, n, size int) {
	t.Helper()
	ctx := t.Context()
	payload := bytes.Repeat([]byte("x"), size)
	for n > 0 {
		batch := make([]lite.NewJob, min(n, 1000))
		for i := range batch {
			batch[i] = lite.NewJob{Queue: "bulk", Payload: payload}
		}
		if _, err := q.EnqueueBatch(ctx, batch); err != nil {
			t.Fatal(err)
		}
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"bulk"}, Max: len(batch)})
		if err != nil {
			t.Fatal(err)
		}
		acks := make([]lite.Done, len(jobs))
		for i, j := range jobs {
			acks[i] = lite.Done{Lease: j.Lease()}
		}
		if _, err := q.AckDoneMany(ctx, acks); err != nil {
			t.Fatal(err)
		}
		n -= len(batch)
	}
}

func TestCleanDeletesInBoundedBatches(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		finishMany(t, q, 401, 10)
		clock.Advance(lite.DefaultRetainDone)
		rep := mustClean(t, q)
		is.Equal(rep.Deleted, int64(401))
		is.Equal(rep.Batches, 3) // 200, 200 and 1: no transaction deletes more than 200
	})
}

func TestALargePurgeDeletesEveryMatchingJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		finishMany(t, q, 6000, 10)
		batches := 0
		lite.SetAfterBatch(q, func() { batches++ })
		clock.Advance(time.Hour)
		n, err := q.Purge(t.Context(), clock.Now())
		is.NoErr(err)
		is.Equal(n, int64(6000))
		is.True(batches > 1) // why: no one statement deletes them all (how many depends on the machine's speed: see TestAPurgesBatchesAreSizedByTime)
	})
}

// pragma reads one integer pragma of a queue's file.
func pragma(t *testing.T, db *sql.DB, name string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(t.Context(), "pragma "+name).Scan(&n); err != nil {
		t.Fatalf("pragma %s: %v", name, err)
	}
	return n
}

func TestANewFileGivesTheSpaceOfCleanedJobsBack(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	q, _ := mustOpen(t, clock)
	is.Equal(pragma(t, q.DB(), "auto_vacuum"), int64(2)) // INCREMENTAL
	finishMany(t, q, 2000, 1024)
	full := pragma(t, q.DB(), "page_count")
	clock.Advance(lite.DefaultRetainDone)
	rep := mustClean(t, q)
	is.Equal(rep.Deleted, int64(2000))
	is.True(rep.FreedPages > 0)
	is.Equal(pragma(t, q.DB(), "freelist_count"), int64(0))        // every free page given back
	is.True(pragma(t, q.DB(), "page_count")*10 < full)             // under a tenth of the full file
	is.Equal(pragma(t, q.DB(), "page_count"), full-rep.FreedPages) // what Clean says it freed
}

func TestVacuumConvertsAnOldFileAndKeepsEveryJob(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "old.db")
	q := mustOpenPath(t, path, clock)
	finishMany(t, q, 1500, 1024)
	waiting := mustEnqueue(t, q, lite.NewJob{Queue: "q", Payload: []byte("keep me")})
	is.NoErr(q.Close())

	// A file as a lite before retention made it: auto_vacuum NONE.
	raw, err := sql.Open("sqlite", path)
	is.NoErr(err)
	_, err = raw.ExecContext(ctx, "pragma auto_vacuum = none")
	is.NoErr(err)
	_, err = raw.ExecContext(ctx, "vacuum")
	is.NoErr(err)
	is.Equal(pragma(t, raw, "auto_vacuum"), int64(0))
	is.NoErr(raw.Close())

	q = mustOpenPath(t, path, clock)
	clock.Advance(lite.DefaultRetainDone)
	rep := mustClean(t, q)
	is.Equal(rep.Deleted, int64(1500))
	is.Equal(rep.FreedPages, int64(0)) // NONE keeps its free pages
	finishMany(t, q, 10, 1024)         // jobs cleaning must not touch yet

	vac, err := q.Vacuum(ctx, lite.VacuumOptions{})
	is.NoErr(err)
	is.Equal(pragma(t, q.DB(), "auto_vacuum"), int64(2)) // converted
	is.True(vac.After*5 < vac.Before)                    // the free pages went back
	is.Equal(vac.After, pragma(t, q.DB(), "page_count")*pragma(t, q.DB(), "page_size"))
	jobs, err := q.List(ctx, lite.ListFilter{Limit: 100})
	is.NoErr(err)
	is.Equal(len(jobs), 11) // every job kept
	is.Equal(string(mustGet(t, q, waiting).Payload), "keep me")
}

func TestVacuumRefusesWhileWorkersRunUnlessForced(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	clock := newFakeClock()
	path := filepath.Join(t.TempDir(), "q.db")
	q := mustOpenPath(t, path, clock)
	finishMany(t, q, 200, 1024)
	_, err := q.Purge(ctx, clock.Now().Add(time.Millisecond), lite.StateDone)
	is.NoErr(err)
	free := pragma(t, q.DB(), "freelist_count")
	is.True(free > 0)
	is.NoErr(lite.Announce(ctx, q, "elsewhere", nil, nil, time.Minute))

	_, err = q.Vacuum(ctx, lite.VacuumOptions{})
	is.True(errors.Is(err, lite.ErrWorkersRunning))
	is.Equal(pragma(t, q.DB(), "freelist_count"), free) // nothing rewritten

	_, err = q.Vacuum(ctx, lite.VacuumOptions{Force: true})
	is.NoErr(err)
	is.Equal(pragma(t, q.DB(), "freelist_count"), int64(0))

	// A worker whose row went stale is no longer running: no force needed.
	finishMany(t, q, 200, 1024)
	_, err = q.Purge(ctx, clock.Now().Add(time.Millisecond), lite.StateDone)
	is.NoErr(err)
	clock.Advance(2 * time.Minute)
	_, err = q.Vacuum(ctx, lite.VacuumOptions{})
	is.NoErr(err)
}

func TestVacuumOnAServerHurriesItsOwnVacuum(t *testing.T) {
	is := is.New(t)
	q, _ := onPostgres(t).mustOpen(t, nil)
	finishMany(t, q, 100, 1024)
	rep, err := q.Vacuum(t.Context(), lite.VacuumOptions{})
	is.NoErr(err)
	is.True(rep.Before > 0)
	is.True(rep.After > 0)
}

func TestCleanGivesBackThePagesAPurgeFreed(t *testing.T) {
	is := is.New(t)
	clock := newFakeClock()
	q, _ := mustOpen(t, clock)
	finishMany(t, q, 500, 1024)
	_, err := q.Purge(t.Context(), clock.Now().Add(time.Millisecond), lite.StateDone)
	is.NoErr(err)
	is.True(pragma(t, q.DB(), "freelist_count") > 0)
	rep := mustClean(t, q)
	is.Equal(rep.Deleted, int64(0))
	is.True(rep.FreedPages > 0)
	is.Equal(pragma(t, q.DB(), "freelist_count"), int64(0))
}
