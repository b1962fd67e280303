package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// readOnly makes paths read-only in a way that holds for root too, as
// tests here run: chmod stops a user's writes, not root's, so as root it
// sets the immutable attribute (chattr +i), which stops every write, and
// clears it at cleanup. The test is skipped where neither can be done.
func readOnly(t *testing.T, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if os.Geteuid() != 0 {
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			mode := info.Mode().Perm()
			if err := os.Chmod(p, mode&^0o222); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(p, mode) })
			continue
		}
		if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
			t.Skipf("chattr +i %s: %v: %s", p, err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", p).Run() })
	}
}

// queueOnDisk makes a closed database with one available job in a
// directory of its own: the file alone, no -wal or -shm beside it.
func queueOnDisk(t *testing.T) (dir, db string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "q")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(dir, "q.db")
	mustLite(t, db, "", "enqueue", "--", "hi")
	return dir, db
}

func TestWorkEndsOnAFileItMayNotWrite(t *testing.T) {
	t.Parallel()
	t.Run("a read-only file ends work --exit-when-empty with one line and exit 1", func(t *testing.T) {
		is := is.New(t)
		_, db := queueOnDisk(t)
		readOnly(t, db)
		r := runLite(t, db, "", "work", "--exit-when-empty", "--", "true")
		is.Equal(r.code, 1)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		is.True(strings.HasPrefix(lines[len(lines)-1], "lite: work: lease every queue: attempt to write a readonly database")) // said once, last
		is.Equal(listJobs(t, db)[0].State, "available")
	})
	t.Run("a read-only directory ends work --exit-when-empty too", func(t *testing.T) {
		is := is.New(t)
		dir, db := queueOnDisk(t)
		readOnly(t, db, dir)
		r := runLite(t, db, "", "work", "--exit-when-empty", "--", "true")
		is.Equal(r.code, 1)
		is.True(strings.Contains(r.stderr, "lite: work: lease every queue: attempt to write a readonly database"))
	})
}

func TestReadCommandsWorkInAReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir, db := queueOnDisk(t)
	readOnly(t, db, dir)
	is.Equal(len(listJobs(t, db)), 1)
	is.True(strings.Contains(mustLite(t, db, "", "stats"), "default"))
	is.True(strings.Contains(mustLite(t, db, "", "show", "1"), `payload:      "hi"`))
	copy := filepath.Join(t.TempDir(), "copy.db")
	mustLite(t, db, "", "backup", copy)
	is.Equal(len(listJobs(t, copy)), 1) // the copy holds the job

	t.Run("a write in it fails with one line and changes nothing", func(t *testing.T) {
		is := is.New(t)
		r := runLite(t, db, "", "cancel", "1")
		is.Equal(r.code, 1)
		is.Equal(r.stderr, "lite: cancel job 1: attempt to write a readonly database (8)\n")
		is.Equal(listJobs(t, db)[0].State, "available")
	})
	entries, err := os.ReadDir(dir)
	is.NoErr(err)
	is.Equal(len(entries), 1) // nothing made beside the file
}
