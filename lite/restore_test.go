package lite_test

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestBackup(t *testing.T) {
	t.Run("a backup taken while a job runs is a whole database, mode 0600, with the job running", func(t *testing.T) {
		is := is.New(t)
		q, _ := mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		mustLeaseOne(t, q, "q")
		dest := filepath.Join(t.TempDir(), "copy.db")
		is.NoErr(q.Backup(t.Context(), dest, lite.BackupOptions{}))
		info, err := os.Stat(dest)
		is.NoErr(err)
		is.Equal(info.Mode().Perm(), fs.FileMode(0o600)) // jobs' payloads are private
		copied := mustOpenPath(t, dest, newFakeClock())
		is.Equal(mustGet(t, copied, id).State, lite.StateRunning)
		leftovers, err := filepath.Glob(dest + ".new-*")
		is.NoErr(err)
		is.Equal(len(leftovers), 0) // the temporary copy went into place
	})

	t.Run("a file at the destination is refused unless forced", func(t *testing.T) {
		is := is.New(t)
		q, _ := mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{})
		dest := filepath.Join(t.TempDir(), "copy.db")
		is.NoErr(os.WriteFile(dest, []byte("mine"), 0o600))
		err := q.Backup(t.Context(), dest, lite.BackupOptions{})
		is.True(errors.Is(err, fs.ErrExist))
		kept, _ := os.ReadFile(dest)
		is.Equal(string(kept), "mine") // untouched
		is.NoErr(q.Backup(t.Context(), dest, lite.BackupOptions{Force: true}))
		copied := mustOpenPath(t, dest, newFakeClock())
		n, err := copied.Unfinished(t.Context(), nil)
		is.NoErr(err)
		is.Equal(n, int64(1))
	})

	t.Run("the queue's own file is refused, even forced", func(t *testing.T) {
		is := is.New(t)
		q, path := mustOpen(t, newFakeClock())
		err := q.Backup(t.Context(), path, lite.BackupOptions{Force: true})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "own file"))
	})

	t.Run("the queue's WAL is refused, even forced, and its commits stay", func(t *testing.T) {
		is := is.New(t)
		q, path := mustOpen(t, newFakeClock())
		id := mustEnqueue(t, q, lite.NewJob{})
		_, err := os.Lstat(path + "-wal")
		is.NoErr(err) // the open queue's commit is in its WAL
		err = q.Backup(t.Context(), path+"-wal", lite.BackupOptions{Force: true})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "own file"))
		is.Equal(mustGet(t, q, id).State, lite.StateAvailable)
	})

	t.Run("a directory or a device is refused, even forced, as not a file", func(t *testing.T) {
		is := is.New(t)
		q, _ := mustOpen(t, newFakeClock())
		dir := t.TempDir()
		err := q.Backup(t.Context(), dir, lite.BackupOptions{Force: true})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "is a directory"))
		info, err := os.Stat(dir)
		is.NoErr(err)
		is.True(info.IsDir()) // still the directory
		link := filepath.Join(dir, "link")
		is.NoErr(os.Symlink(os.DevNull, link))
		err = q.Backup(t.Context(), link, lite.BackupOptions{Force: true})
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), "not a regular file"))
		target, err := os.Readlink(link)
		is.NoErr(err)
		is.Equal(target, os.DevNull) // the link was not replaced
	})

	t.Run("a destination in a missing directory names the directory", func(t *testing.T) {
		is := is.New(t)
		q, _ := mustOpen(t, newFakeClock())
		missing := filepath.Join(t.TempDir(), "nodir")
		err := q.Backup(t.Context(), filepath.Join(missing, "copy.db"), lite.BackupOptions{})
		is.True(errors.Is(err, fs.ErrNotExist))
		is.True(strings.Contains(err.Error(), "directory "+missing+": file does not exist"))
		is.True(!strings.Contains(err.Error(), ".new-")) // not the temporary name
	})

	t.Run("on PostgreSQL a backup says what to use instead", func(t *testing.T) {
		is := is.New(t)
		q, _ := onPostgres(t).mustOpen(t, nil)
		err := q.Backup(t.Context(), filepath.Join(t.TempDir(), "copy.db"), lite.BackupOptions{})
		is.True(errors.Is(err, errors.ErrUnsupported))
		is.True(strings.Contains(err.Error(), "pg_dump"))
	})
}

// issued records every id and every (id, generation) a queue handed out,
// and fails the test on the first one handed out twice.
type issued struct {
	tb    testing.TB
	ids   map[int64]bool
	pairs map[[2]int64]bool
}

func newIssued(tb testing.TB) *issued {
	return &issued{tb: tb, ids: map[int64]bool{}, pairs: map[[2]int64]bool{}}
}

func (s *issued) enqueue(q *lite.Queue, n int) {
	s.tb.Helper()
	for range n {
		id := mustEnqueue(s.tb, q, lite.NewJob{Queue: "q"})
		if s.ids[id] {
			s.tb.Fatalf("id %d handed out twice", id)
		}
		s.ids[id] = true
	}
}

// churn leases every available job and releases it, rounds times.
func (s *issued) churn(q *lite.Queue, rounds int) {
	s.tb.Helper()
	for range rounds {
		for _, l := range s.lease(q, 1000) {
			if err := q.Release(s.tb.Context(), l); err != nil {
				s.tb.Fatalf("release: %v", err)
			}
		}
	}
}

// lease leases up to n available jobs.
func (s *issued) lease(q *lite.Queue, n int) []lite.Lease {
	s.tb.Helper()
	jobs, err := q.Lease(s.tb.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: n})
	if err != nil {
		s.tb.Fatalf("lease: %v", err)
	}
	var leases []lite.Lease
	for _, j := range jobs {
		p := [2]int64{j.ID, j.Generation}
		if s.pairs[p] {
			s.tb.Fatalf("lease (%d, %d) handed out twice", p[0], p[1])
		}
		s.pairs[p] = true
		leases = append(leases, j.Lease())
	}
	return leases
}

func TestRestoreKeepsFencing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		seen := newIssued(t)
		seen.enqueue(q, 6)
		seen.churn(q, 2)
		running := seen.lease(q, 3) // running in the copy; the rest available
		restore := backup(t, e, q, dsn)

		// The live database goes on after the copy: one running job is
		// done, every job changes hands many times, new jobs take new
		// ids.
		is.NoErr(q.AckDone(t.Context(), running[0], nil))
		for _, l := range running[1:] {
			is.NoErr(q.Release(t.Context(), l))
		}
		seen.enqueue(q, 4)
		seen.churn(q, 5)
		clock.Advance(time.Minute)

		q = restore(clock)
		for _, l := range running {
			j := mustGet(t, q, l.JobID)
			is.Equal(j.State, lite.StateAvailable) // running in the copy: available again
			is.True(j.Generation > l.Generation)
		}
		seen.churn(q, 3)
		seen.enqueue(q, 3)
		seen.churn(q, 2)
	})
}

// backup copies the queue's database and returns what restores the copy
// in its place, fenced, and opens it again: lite's own Restore on SQLite,
// on PostgreSQL a copy of lite_jobs and its id sequence put back by hand
// (as a point-in-time recovery would) and then FenceRestore.
func backup(t *testing.T, e testEngine, q *lite.Queue, dsn string) func(*fakeClock) *lite.Queue {
	t.Helper()
	is := is.New(t)
	if e.name == "sqlite" {
		dest := filepath.Join(t.TempDir(), "copy.db")
		is.NoErr(q.Backup(t.Context(), dest, lite.BackupOptions{}))
		return func(clock *fakeClock) *lite.Queue {
			is.NoErr(q.Close())
			rep, err := lite.Restore(t.Context(), dest, dsn, lite.RestoreOptions{Options: lite.Options{Now: clock.Now}})
			is.NoErr(err)
			is.Equal(rep.Floor, clock.Now().UnixMilli()<<11)
			return mustOpenPath(t, dsn, clock)
		}
	}
	db := q.DB()
	var last int64
	var called bool
	_, err := db.ExecContext(t.Context(), `create table jobs_copy as select * from lite_jobs`)
	is.NoErr(err)
	seq := `pg_get_serial_sequence('lite_jobs', 'id')::regclass`
	is.NoErr(db.QueryRowContext(t.Context(), `select last_value, is_called from lite_jobs_id_seq`).Scan(&last, &called))
	return func(clock *fakeClock) *lite.Queue {
		_, err := db.ExecContext(t.Context(), `delete from lite_jobs`)
		is.NoErr(err)
		_, err = db.ExecContext(t.Context(), `insert into lite_jobs overriding system value select * from jobs_copy`)
		is.NoErr(err)
		_, err = db.ExecContext(t.Context(), `select setval(`+seq+`, $1, $2)`, last, called)
		is.NoErr(err)
		restored := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		rep, err := restored.FenceRestore(t.Context())
		is.NoErr(err)
		is.Equal(rep.Floor, clock.Now().UnixMilli()<<11)
		return restored
	}
}

func TestFenceRestore(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("ids rise above the floor though the copy never had a job", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			rep, err := q.FenceRestore(t.Context())
			is.NoErr(err)
			is.Equal(mustEnqueue(t, q, lite.NewJob{}), rep.Floor+1)
		})

		t.Run("a second restore in the same millisecond is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			_, err := q.FenceRestore(t.Context())
			is.NoErr(err)
			// The first one's floor may have been issued as an id already.
			_, err = q.FenceRestore(t.Context())
			is.True(errors.Is(err, lite.ErrClockBehind))
		})

		t.Run("a clock behind an earlier restore is refused, and nothing changes", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			_, err := q.FenceRestore(t.Context())
			is.NoErr(err)
			leased := mustLeaseOne(t, q, "q")
			clock.Advance(-time.Hour)
			_, err = q.FenceRestore(t.Context())
			is.True(errors.Is(err, lite.ErrClockBehind))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateRunning) // not released
			is.Equal(j.Generation, leased.Generation)
		})
	})
}

func TestRestoreRefuses(t *testing.T) {
	// copyAndPath is a backup of a queue with one job, and a fresh path
	// holding a lite database.
	copyAndPath := func(t *testing.T) (string, string) {
		t.Helper()
		q, path := mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{})
		src := filepath.Join(t.TempDir(), "copy.db")
		if err := q.Backup(t.Context(), src, lite.BackupOptions{}); err != nil {
			t.Fatal(err)
		}
		return src, path
	}

	t.Run("a file another process has open is refused, even forced", func(t *testing.T) {
		is := is.New(t)
		src, path := copyAndPath(t) // the queue on path stays open
		_, err := lite.Restore(t.Context(), src, path, lite.RestoreOptions{Force: true})
		is.True(errors.Is(err, lite.ErrInUse))
	})

	t.Run("a file another process has open is not fenced in place", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("Windows cannot tell who holds a file's lock")
		}
		is := is.New(t)
		q, path := mustOpen(t, newFakeClock())
		mustEnqueue(t, q, lite.NewJob{})
		is.NoErr(q.Close())
		holder := exec.Command(os.Args[0], "-test.run=^$")
		holder.Env = append(os.Environ(), "LITE_TEST_HOLDER="+path)
		stdin, err := holder.StdinPipe()
		is.NoErr(err)
		stdout, err := holder.StdoutPipe()
		is.NoErr(err)
		is.NoErr(holder.Start())
		t.Cleanup(func() { stdin.Close(); holder.Wait() })
		line, err := bufio.NewReader(stdout).ReadString('\n')
		is.NoErr(err)
		is.Equal(line, "open\n")
		err = lite.CheckInPlace(path)
		is.True(errors.Is(err, lite.ErrInUse)) // why: its running jobs would start again while the first runs
	})

	t.Run("a file with live workers is refused unless forced", func(t *testing.T) {
		is := is.New(t)
		src := filepath.Join(t.TempDir(), "copy.db")
		clock := newFakeClock()
		q, path := mustOpen(t, clock)
		_, err := q.DB().ExecContext(t.Context(), `insert into lite_workers (id, identity, queues, kinds, started_at, seen_at, stale_after_ms)
values ('w', 'host:1', '[]', '[]', $1, $1, 30000)`, clock.Now().UnixMilli())
		is.NoErr(err)
		is.NoErr(q.Backup(t.Context(), src, lite.BackupOptions{}))
		is.NoErr(q.Close())
		opts := lite.RestoreOptions{Options: lite.Options{Now: clock.Now}}
		_, err = lite.Restore(t.Context(), src, path, opts)
		is.True(errors.Is(err, lite.ErrWorkersRunning))
		opts.Force = true
		_, err = lite.Restore(t.Context(), src, path, opts)
		is.NoErr(err)
		workers, err := mustOpenPath(t, path, clock).Workers(t.Context())
		is.NoErr(err)
		is.Equal(len(workers), 0) // the copy's worker ran on the replaced file
	})

	t.Run("a file that is not a lite database is kept", func(t *testing.T) {
		is := is.New(t)
		src, _ := copyAndPath(t)
		path := filepath.Join(t.TempDir(), "notes.txt")
		is.NoErr(os.WriteFile(path, []byte("mine"), 0o600))
		_, err := lite.Restore(t.Context(), src, path, lite.RestoreOptions{})
		is.True(errors.Is(err, lite.ErrNotLite))
		kept, _ := os.ReadFile(path)
		is.Equal(string(kept), "mine")
	})

	t.Run("a copy that is not a lite database is refused", func(t *testing.T) {
		is := is.New(t)
		src := filepath.Join(t.TempDir(), "notes.txt")
		is.NoErr(os.WriteFile(src, []byte("mine"), 0o600))
		path := filepath.Join(t.TempDir(), "lite.db")
		_, err := lite.Restore(t.Context(), src, path, lite.RestoreOptions{})
		is.True(err != nil)
		_, err = os.Stat(path)
		is.True(errors.Is(err, fs.ErrNotExist)) // nothing put in place
		leftovers, _ := filepath.Glob(path + "*")
		is.Equal(len(leftovers), 0)
	})
}
