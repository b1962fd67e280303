package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestBackupAndRestoreFromTheCLI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		dest := filepath.Join(t.TempDir(), "copy.db")
		if e.name == "postgres" {
			for _, args := range [][]string{{"backup", dest}, {"restore", dest}} {
				r := runLite(t, db, "", args...)
				is.Equal(r.code, 1)
				is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
				is.True(strings.Contains(r.stderr, "on PostgreSQL"))
				is.True(strings.Contains(r.stderr, "lite restore --in-place")) // what to run after the server's own restore
			}
			is.True(strings.Contains(runLite(t, db, "", "backup", dest).stderr, "pg_dump"))
		} else {
			is.True(strings.HasPrefix(mustLite(t, db, "", "backup", dest), "backed up "+db+" to "+dest+" ("))
			r := runLite(t, db, "", "backup", dest)
			is.Equal(r.code, 1)
			is.Equal(r.stderr, "lite: backup to "+dest+": file already exists: give --force to replace it\n")
			mustLite(t, db, "", "backup", "--force", dest)

			restored := filepath.Join(t.TempDir(), "restored.db")
			out := mustLite(t, restored, "", "restore", dest)
			is.True(strings.HasPrefix(out, "restored "+dest+" to "+restored+": 0 running jobs available again; every id and generation from now on is above "))
			jobs := listJobs(t, restored)
			is.Equal(len(jobs), 1)
			is.True(jobs[0].Generation > 1<<40) // raised to the floor
			db = restored
		}
		fenced := liteJSON(t, db, "", "restore", "--in-place").(map[string]any)
		is.True(fenced["floor"].(float64) > 1<<40)
		is.Equal(fenced["requeued"], 0.0)

		for _, args := range [][]string{{"restore"}, {"restore", "--in-place", dest}} {
			r := runLite(t, db, "", args...)
			is.Equal(r.code, 2) // usage
			is.Equal(strings.Count(r.stderr, "\n"), 1)
		}
	})
}

func TestRestoreRefusesAFileAWorkerProcessHasOpen(t *testing.T) {
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	dest := filepath.Join(t.TempDir(), "copy.db")
	mustLite(t, db, "", "backup", dest)
	worker := startWorker(t, db, nil, "-q", "idle", "--", "true")
	eventually(t, "the worker announces itself", func() bool {
		return strings.Contains(mustLite(t, db, "", "workers"), "idle")
	})

	r := runLite(t, db, "", "restore", dest)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "lite: restore "+dest+" to "+db+": workers are running: 1 live on the file would keep writing to the replaced one; stop them first (lite workers lists them), or give --force\n")
	r = runLite(t, db, "", "restore", "--force", dest)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "lite: restore "+dest+" to "+db+": database in use: another process has it open; stop it first\n")

	// Killed, the worker is still announced, and no longer has the file
	// open: --force replaces it.
	is.NoErr(worker.Process.Kill()) // SIGKILL
	worker.Wait()
	is.Equal(runLite(t, db, "", "restore", dest).code, 1)
	mustLite(t, db, "", "restore", "--force", dest)
	_, err := os.Stat(db + "-wal")
	is.True(os.IsNotExist(err)) // no WAL of the replaced file beside the copy
}

func TestRestoreInPlaceRefusesWhileWorkersAreLive(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		startWorker(t, db, nil, "-q", "idle", "--", "true")
		eventually(t, "the worker announces itself", func() bool {
			return strings.Contains(mustLite(t, db, "", "workers"), "idle")
		})
		r := runLite(t, db, "", "restore", "--in-place")
		is.Equal(r.code, 1)
		is.Equal(strings.Count(r.stderr, "\n"), 1)
		is.True(strings.Contains(r.stderr, "workers are running: 1 live would see their running jobs started again; stop them first (lite workers lists them), or give --force"))
		is.True(strings.HasPrefix(mustLite(t, db, "", "restore", "--in-place", "--force"), "fenced "))
	})
}

func TestABackupTakenWhileWorkersRunIsWhole(t *testing.T) {
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	const n = 400
	enqueueN(t, db, n)
	for range 2 {
		startWorker(t, db, nil, "-c", "4", "--", "true")
	}
	dir := t.TempDir()
	for i := range 5 {
		dest := filepath.Join(dir, fmt.Sprintf("copy%d.db", i))
		mustLite(t, db, "", "backup", dest)
		copied, err := sql.Open("sqlite", "file:"+dest+"?mode=ro")
		is.NoErr(err)
		var check string
		var jobs int
		is.NoErr(copied.QueryRow(`pragma integrity_check`).Scan(&check))
		is.NoErr(copied.QueryRow(`select count(*) from lite_jobs`).Scan(&jobs))
		is.NoErr(copied.Close())
		is.Equal(check, "ok")
		is.Equal(jobs, n) // every job, in whatever state the commit it copies left it
	}
}
