package main

import (
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestBackupAndRestoreFromTheCLI(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	dest := filepath.Join(t.TempDir(), "copy.db")
	mustLite(t, db, "", "backup", dest)
	worker := startWorker(t, db, nil, "-q", "idle", "--", "true")
	eventually(t, "the worker announces itself", func() bool {
		return strings.Contains(mustLite(t, db, "", "workers"), "idle")
	})

	// Open in the worker, the file's lock is refused before its workers
	// are read, with or without --force.
	r := runLite(t, db, "", "restore", dest)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "lite: restore "+dest+" to "+db+": database in use: another process has it open; stop it first\n")
	r = runLite(t, db, "", "restore", "--force", dest)
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "lite: restore "+dest+" to "+db+": database in use: another process has it open; stop it first\n")
	// Fenced in place, its running jobs would start a second time while
	// the first runs: refused too, --force or not.
	for _, args := range [][]string{{"restore", "--in-place"}, {"restore", "--in-place", "--force"}} {
		r = runLite(t, db, "", args...)
		is.Equal(r.code, 1)
		is.Equal(r.stderr, "lite: check "+db+": database in use: another process has it open; stop it first, as a restore is fenced before any worker starts\n")
	}

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
	t.Parallel()
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
		if e.name == "sqlite" {
			// The worker has the file open: refused before its workers
			// are read, --force or not (TestRestoreRefusesAFileAWorkerProcessHasOpen).
			is.True(strings.Contains(r.stderr, "another process has it open"))
			return
		}
		is.True(strings.Contains(r.stderr, "workers are running: 1 live would see their running jobs started again; stop them first (lite workers lists them), or give --force"))
		is.True(strings.HasPrefix(mustLite(t, db, "", "restore", "--in-place", "--force"), "fenced "))
	})
}

func TestABackupTakenWhileWorkersRunIsWhole(t *testing.T) {
	t.Parallel()
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

// integrity is what pragma integrity_check says of the file at db, once
// SQLite has replayed whatever WAL lies beside it.
func integrity(t *testing.T, db string) string {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var check string
	if err := conn.QueryRow(`pragma integrity_check`).Scan(&check); err != nil {
		return err.Error()
	}
	return check
}

// TestARestoreRacingAWorkersStartNeverCorruptsTheFile starts a worker
// process at a moment spread across each restore: one that started
// within about 80 ms of it once slipped past the check, and its WAL,
// left beside the new file, was replayed onto it.
func TestARestoreRacingAWorkersStartNeverCorruptsTheFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	enqueueN(t, db, 2000) // a copy that takes a while to make and fence
	copyDB := filepath.Join(t.TempDir(), "copy.db")
	mustLite(t, db, "", "backup", copyDB)
	restored := 0
	const tries = 30
	for i := range tries {
		// The worker starts from 60 ms after the restore to 85 ms before
		// it: its process takes tens of milliseconds to open the file, so
		// some open it while the restore runs.
		var out, errOut strings.Builder
		var restore, worker *exec.Cmd
		if lead := time.Duration(i*5-60) * time.Millisecond; lead < 0 {
			restore = startLite(t, db, &out, &errOut, "restore", "--force", copyDB)
			time.Sleep(-lead)
			worker = startWorker(t, db, nil, "-q", "idle", "--", "true")
		} else {
			worker = startWorker(t, db, nil, "-q", "idle", "--", "true")
			time.Sleep(lead)
			restore = startLite(t, db, &out, &errOut, "restore", "--force", copyDB)
		}
		err := restore.Wait()
		is.NoErr(worker.Process.Kill()) // SIGKILL: its WAL stays
		worker.Wait()
		if err == nil {
			restored++
		} else {
			is.True(strings.Contains(errOut.String(), "database in use: another process has it open")) // refused, not failed
		}
		is.Equal(integrity(t, db), "ok") // try i
	}
	// How many succeed depends on the machine's load: the assertions are
	// that none corrupts the file and none fails but as refused.
	t.Logf("%d of %d restores succeeded, the rest refused", restored, tries)
}

// TestRestoreInPlaceRefusesAWALLeftBesideACopyPutBackByHand: SIGKILLed
// workers leave a -wal; a copy put back by hand over the file would get
// it replayed onto it by the fence (malformed, for good). The fence
// refuses and leaves the copy as it was; once the WAL is removed it runs.
func TestRestoreInPlaceRefusesAWALLeftBesideACopyPutBackByHand(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	enqueueN(t, db, 200)
	copyDB := filepath.Join(t.TempDir(), "copy.db")
	mustLite(t, db, "", "backup", copyDB)
	enqueueN(t, db, 200)
	worker := startWorker(t, db, nil, "-q", "idle", "--", "true")
	eventually(t, "the worker announces itself", func() bool {
		return strings.Contains(mustLite(t, db, "", "workers"), "idle")
	})
	is.NoErr(worker.Process.Kill()) // SIGKILL: its WAL stays
	worker.Wait()
	_, err := os.Stat(db + "-wal")
	is.NoErr(err)
	copied, err := os.ReadFile(copyDB)
	is.NoErr(err)
	is.NoErr(os.WriteFile(db, copied, 0o600)) // put back by hand, as cp would

	r := runLite(t, db, "", "restore", "--in-place", "--force")
	is.Equal(r.code, 1)
	is.Equal(strings.Count(r.stderr, "\n"), 1)
	is.True(strings.Contains(r.stderr, "delete "+db+"-wal and "+db+"-shm"))
	kept, err := os.ReadFile(db)
	is.NoErr(err)
	is.True(string(kept) == string(copied)) // untouched

	is.NoErr(os.Remove(db + "-wal"))
	is.NoErr(os.Remove(db + "-shm"))
	is.True(strings.HasPrefix(mustLite(t, db, "", "restore", "--in-place", "--force"), "fenced "))
	is.Equal(integrity(t, db), "ok")
}
