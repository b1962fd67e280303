package lite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// plainSQLite makes a SQLite file with the statements, outside lite.
func plainSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	plainDB(t, "sqlite", path, stmts...)
}

// plainDB runs the statements on the database at dsn through driver,
// outside lite.
func plainDB(t *testing.T, driver, dsn string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
}

func TestOpen(t *testing.T) {
	t.Run("a new file is created with mode 0600 in WAL mode", func(t *testing.T) {
		is := is.New(t)
		q, path := mustOpen(t, nil)
		info, err := os.Stat(path)
		is.NoErr(err)
		is.Equal(info.Mode().Perm(), os.FileMode(0o600))
		var mode string
		is.NoErr(q.DB().QueryRow(`pragma journal_mode`).Scan(&mode))
		is.Equal(mode, "wal")
		var sync int
		is.NoErr(q.DB().QueryRow(`pragma synchronous`).Scan(&sync))
		is.Equal(sync, 2) // FULL by default
	})

	// Clean gives space back only in this mode, and SQLite takes it only
	// before a file's first page is written.
	autoVacuum := func(t *testing.T, q *lite.Queue) int64 {
		var mode int64
		if err := q.DB().QueryRow(`pragma auto_vacuum`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		return mode
	}
	t.Run("an existing empty file is made as a new one, in incremental auto-vacuum", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "touched.db")
		is.NoErr(os.WriteFile(path, nil, 0o600)) // touch
		q := mustOpenPath(t, path, nil)
		is.Equal(autoVacuum(t, q), int64(2)) // INCREMENTAL
		mustEnqueue(t, q, lite.NewJob{})
	})
	t.Run("a file made without hard links is in incremental auto-vacuum", func(t *testing.T) {
		is := is.New(t)
		lite.NoHardLinks(t)
		q, _ := mustOpen(t, nil)
		is.Equal(autoVacuum(t, q), int64(2))
		mustEnqueue(t, q, lite.NewJob{})
	})
	t.Run("a file with pages keeps its auto-vacuum mode", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "app.db")
		plainSQLite(t, path, `create table users (id integer primary key)`)
		q := mustOpenPath(t, path, nil)
		is.Equal(autoVacuum(t, q), int64(0)) // NONE until Vacuum rewrites it
	})

	t.Run("SyncNormal sets synchronous to NORMAL", func(t *testing.T) {
		is := is.New(t)
		q, err := lite.Open(t.Context(), filepath.Join(t.TempDir(), "n.db"), lite.Options{Synchronous: lite.SyncNormal})
		is.NoErr(err)
		defer q.Close()
		var sync int
		is.NoErr(q.DB().QueryRow(`pragma synchronous`).Scan(&sync))
		is.Equal(sync, 1)
	})

	t.Run("reopening keeps the jobs and applies no migration twice", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "lite.db")
		q := mustOpenPath(t, path, nil)
		id := mustEnqueue(t, q, lite.NewJob{Payload: []byte("kept")})
		is.NoErr(q.Close())
		q = mustOpenPath(t, path, nil)
		is.Equal(string(mustGet(t, q, id).Payload), "kept")
		var n int
		is.NoErr(q.DB().QueryRow(`select count(*) from lite_migrations`).Scan(&n))
		is.Equal(n, lite.SchemaVersion())
	})

	t.Run("lite shares a file with the user's own tables", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "app.db")
		plainSQLite(t, path, `create table users (id integer primary key)`, `insert into users values (7)`)
		q := mustOpenPath(t, path, nil)
		var id int
		is.NoErr(q.DB().QueryRow(`select id from users`).Scan(&id))
		is.Equal(id, 7)
	})

	t.Run("New works on the caller's database and leaves it open", func(t *testing.T) {
		is := is.New(t)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "own.db")+"?_txlock=immediate")
		is.NoErr(err)
		defer db.Close()
		q, err := lite.New(t.Context(), db, lite.Options{})
		is.NoErr(err)
		mustEnqueue(t, q, lite.NewJob{})
		is.NoErr(q.Close())
		is.NoErr(db.Ping()) // still the caller's
	})

	t.Run("invalid options are an error", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		for _, o := range []lite.Options{{BusyTimeout: -1}, {MaxPayloadBytes: -1}, {Readers: -1}, {Synchronous: 9},
			{BusyTimeout: time.Microsecond},    // SQLite would get 0 ms: no waiting at all
			{BusyTimeout: 25 * 24 * time.Hour}, // over an int32 of ms, SQLite reads 0
			{WALSizeLimit: -1}} {
			_, err := lite.Open(t.Context(), filepath.Join(dir, "x.db"), o)
			if err == nil {
				t.Errorf("options %+v: no error", o)
			}
		}
		_, err := os.Stat(filepath.Join(dir, "x.db"))
		is.True(errors.Is(err, os.ErrNotExist)) // no file made for a bad call
	})
}

func TestOpenRefusesBadFiles(t *testing.T) {
	t.Run("a missing directory", func(t *testing.T) {
		is := is.New(t)
		_, err := lite.Open(t.Context(), filepath.Join(t.TempDir(), "no", "such", "dir", "x.db"), lite.Options{})
		is.True(errors.Is(err, os.ErrNotExist))
	})

	t.Run("a directory", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		_, err := lite.Open(t.Context(), dir, lite.Options{})
		is.Equal(err.Error(), "open "+dir+": is a directory")
	})

	refusals := []struct {
		name string
		make func(t *testing.T, path string)
		want error
	}{
		{"a file that is not a database", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("this is a text file, not SQLite, and it is long enough to have a header......."), 0o600); err != nil {
				t.Fatal(err)
			}
		}, lite.ErrNotLite},
		{"a foreign database with a clashing table", func(t *testing.T, path string) {
			plainSQLite(t, path, `create table lite_jobs (name text)`, `insert into lite_jobs values ('theirs')`)
		}, lite.ErrNotLite},
		{"a foreign database with a view named lite_jobs", func(t *testing.T, path string) {
			plainSQLite(t, path, `create view lite_jobs as select 1 as id`)
		}, lite.ErrNotLite},
		{"a foreign database with an index named like lite's", func(t *testing.T, path string) {
			plainSQLite(t, path, `create table orders (id integer primary key, queue text)`,
				`create index lite_jobs_available on orders (queue)`)
		}, lite.ErrNotLite},
		{"a foreign lite_migrations at version 1 without lite_jobs", func(t *testing.T, path string) {
			plainSQLite(t, path, `create table lite_migrations (version integer primary key, name text not null, applied_at integer not null) strict`,
				`insert into lite_migrations values (1, 'jobs', 0)`)
		}, lite.ErrNotLite},
		{"a lite database whose lite_jobs was dropped", func(t *testing.T, path string) {
			q := mustOpenPath(t, path, nil)
			if _, err := q.DB().Exec(`drop table lite_jobs`); err != nil {
				t.Fatal(err)
			}
			q.Close()
		}, lite.ErrNotLite},
		{"a lite database whose index was changed by hand", func(t *testing.T, path string) {
			q := mustOpenPath(t, path, nil)
			mustEnqueue(t, q, lite.NewJob{})
			for _, s := range []string{`drop index lite_jobs_running`,
				`create index lite_jobs_running on lite_jobs (leased_at) where state = 'running'`} {
				if _, err := q.DB().Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			q.Close()
		}, lite.ErrNotLite},
		{"a database from a newer lite", func(t *testing.T, path string) {
			q := mustOpenPath(t, path, nil)
			mustEnqueue(t, q, lite.NewJob{})
			if _, err := q.DB().Exec(`insert into lite_migrations values (999, 'future', 0)`); err != nil {
				t.Fatal(err)
			}
			q.Close()
		}, lite.ErrSchemaTooNew},
	}
	for _, r := range refusals {
		t.Run(r.name+" is refused and left untouched", func(t *testing.T) {
			is := is.New(t)
			path := filepath.Join(t.TempDir(), "x.db")
			r.make(t, path)
			before := fileSum(t, path)
			_, err := lite.Open(t.Context(), path, lite.Options{})
			is.True(errors.Is(err, r.want))
			is.Equal(fileSum(t, path), before)
		})
	}
}

func TestOpenForAReadTakesNoWriteLock(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "busy.db")
	q := mustOpenPath(t, path, nil)
	id := mustEnqueue(t, q, lite.NewJob{Payload: []byte("readable")})
	is.NoErr(q.Close())

	release := holdWriteLock(t, path) // another process is mid-write
	defer release()
	// why: the schema is current, so neither migrating nor WAL mode needs
	// the lock; `lite ls` must work while a writer holds it
	q, err := lite.Open(t.Context(), path, lite.Options{BusyTimeout: 50 * time.Millisecond})
	is.NoErr(err)
	defer q.Close()
	is.Equal(string(mustGet(t, q, id).Payload), "readable")
	_, err = q.Stats(t.Context())
	is.NoErr(err)
}

func TestOpenLeavesNothingBehindOnFailure(t *testing.T) {
	for _, name := range []string{":memory:", "", "file:jobs.db?mode=memory"} {
		t.Run(fmt.Sprintf("the non-file name %q is refused and no file is made", name), func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			t.Chdir(dir)
			_, err := lite.Open(t.Context(), name, lite.Options{})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "needs a file path")) // says why
			entries, err := os.ReadDir(dir)
			is.NoErr(err)
			is.Equal(len(entries), 0)
		})
	}

	t.Run("a cancelled Open makes no file", func(t *testing.T) {
		is := is.New(t)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := lite.Open(ctx, filepath.Join(dir, "new.db"), lite.Options{})
		is.True(errors.Is(err, context.Canceled))
		entries, err := os.ReadDir(dir)
		is.NoErr(err)
		is.Equal(len(entries), 0) // neither the file nor its -wal or -shm
	})

	t.Run("Opens of one new path at once, some cancelled, lose no job", func(t *testing.T) {
		for round := range scaled(20) {
			is := is.New(t)
			path := filepath.Join(t.TempDir(), "new.db")
			var wg sync.WaitGroup
			var stored atomic.Int64
			for i := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ctx, cancel := context.WithCancel(t.Context())
					defer cancel()
					if i%2 == 1 {
						// why: a random moment, so that some Opens are
						// cancelled while another creates the file
						time.AfterFunc(time.Duration(rand.N(2000))*time.Microsecond, cancel)
					}
					q, err := lite.Open(ctx, path, lite.Options{})
					if err != nil {
						return
					}
					defer q.Close()
					if _, err := q.Enqueue(t.Context(), lite.NewJob{}); err == nil {
						stored.Add(1)
					}
				}()
			}
			wg.Wait()
			q := mustOpenPath(t, path, nil)
			st, err := q.Stats(t.Context())
			is.NoErr(err)
			var n int64
			for _, s := range st {
				n += s.Counts[lite.StateAvailable]
			}
			if n != stored.Load() {
				t.Fatalf("round %d: %d jobs acknowledged, %d in the file", round, stored.Load(), n)
			}
			entries, err := os.ReadDir(filepath.Dir(path))
			is.NoErr(err)
			for _, e := range entries {
				is.True(!strings.Contains(e.Name(), ".new-")) // no temporary file left
			}
		}
	})

	t.Run("a file that was there before is not removed when Open fails", func(t *testing.T) {
		is := is.New(t)
		path := filepath.Join(t.TempDir(), "old.db")
		is.NoErr(os.WriteFile(path, nil, 0o600))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := lite.Open(ctx, path, lite.Options{})
		is.True(errors.Is(err, context.Canceled))
		_, err = os.Stat(path)
		is.NoErr(err)
	})
}

func TestExternalCheckpointsLeaveCheckpointsToTheirOwner(t *testing.T) {
	for _, external := range []bool{false, true} {
		t.Run(fmt.Sprintf("with ExternalCheckpoints %v every connection's autocheckpoint is as asked", external), func(t *testing.T) {
			is := is.New(t)
			q := mustOpenOpts(t, filepath.Join(t.TempDir(), "q.db"), lite.Options{ExternalCheckpoints: external})
			var pages int
			is.NoErr(q.DB().QueryRowContext(t.Context(), "pragma wal_autocheckpoint").Scan(&pages))
			if external {
				is.Equal(pages, 0) // Litestream checkpoints, lite never does
			} else {
				is.Equal(pages, 1000) // SQLite's default
			}
		})
	}
}
