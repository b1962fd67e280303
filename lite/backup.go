package lite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/google/uuid"
)

// BackupOptions tunes Backup; the zero value is the safe default.
type BackupOptions struct {
	// Force replaces a file already at the destination. Without it Backup
	// refuses one, with an error that matches fs.ErrExist.
	Force bool
}

// errServerBackup says what to use instead of lite's file copies on a
// server, whose own tools copy it consistently.
var errServerBackup = fmt.Errorf("%w on PostgreSQL: back up with pg_dump or the server's own backups (a base backup with WAL archiving), and after restoring one run FenceRestore (lite restore --in-place)", errors.ErrUnsupported)

var errExists = fmt.Errorf("%w: set BackupOptions.Force to replace it", fs.ErrExist)

// Backup writes a consistent copy of the queue's file to dest (mode 0600)
// while workers run on it: it is one read transaction (VACUUM INTO), so
// it holds no lock that stops a writer, and the copy is the file as one
// commit left it, compacted. Never copy a live file by other means: a copy
// taken between its writes, or without its WAL, is torn.
//
// The copy is written under a temporary name beside dest and moved into
// place once it is whole and on disk, so dest is never half a database.
// An existing dest is refused unless opts.Force; the queue's own file,
// its -wal, -shm and -journal, and anything not a regular file are
// refused even then. A copy lags the file it was taken from: restore it with Restore,
// which keeps fencing (see FenceRestore). On PostgreSQL Backup returns
// an error matching errors.ErrUnsupported that names the server's tools.
func (q *Queue) Backup(ctx context.Context, dest string, opts BackupOptions) error {
	if err := q.backup(ctx, dest, opts); err != nil {
		return fmt.Errorf("backup to %s: %w", dest, err)
	}
	return nil
}

func (q *Queue) backup(ctx context.Context, dest string, opts BackupOptions) error {
	if q.engine.onServer() {
		return errServerBackup
	}
	if err := checkPath(dest); err != nil {
		return err
	}
	if err := checkDest(q.path, dest); err != nil {
		return err
	}
	if _, err := os.Lstat(dest); err == nil && !opts.Force {
		return errExists // before the copy, which may take long
	}
	tmp, err := snapshot(ctx, q.path, q.opts, dest)
	if err != nil {
		return err
	}
	defer removeDatabase(tmp)
	return install(tmp, dest, opts.Force)
}

// checkDest refuses a dest that Force must not replace: anything but a
// regular file (a rename would put the copy in place of a directory, a
// link or a device such as /dev/stdout), and the queue's own file or its
// -wal, -shm or -journal (a copy renamed over the WAL drops the commits
// not yet checkpointed into the file).
func checkDest(path, dest string) error {
	info, err := os.Lstat(dest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case info.IsDir():
		return errors.New("is a directory: name the file to write")
	case !info.Mode().IsRegular():
		return errors.New("is not a regular file")
	}
	for _, own := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if same, err := sameFile(dest, own); err != nil || same {
			return errors.Join(err, errors.New("is the queue's own file"))
		}
	}
	return nil
}

// sameFile reports whether a and b name one file; false if b is not there.
func sameFile(a, b string) (bool, error) {
	bi, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ai, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	return os.SameFile(ai, bi), nil
}

// snapshot writes a consistent copy of the database at path to a new
// file, mode 0600, under a temporary name beside dest, and returns that
// name. It reads path on a connection of its own (the queue's readers
// are query_only, which VACUUM INTO refuses): SQLite's own, so the
// process keeps its locks on the file. VACUUM INTO takes an empty file
// and keeps its mode.
func snapshot(ctx context.Context, path string, opts Options, dest string) (string, error) {
	abs, err := filepath.Abs(dest) // a name SQLite cannot read as a URI
	if err != nil {
		return "", err
	}
	tmp := fmt.Sprintf("%s.new-%s", abs, uuid.NewString()[:8])
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // not the temporary name, which the user never gave
		return "", fmt.Errorf("directory %s: %w", filepath.Dir(abs), fs.ErrNotExist)
	}
	if err != nil {
		return "", err
	}
	f.Close()
	db, err := sql.Open(sqliteDriver, dsn(path, opts, false))
	if err == nil {
		_, err = db.ExecContext(ctx, "vacuum into ?", tmp)
		err = errors.Join(classify(err), db.Close())
	}
	if err != nil {
		removeDatabase(tmp)
		return "", fmt.Errorf("copy: %w", err)
	}
	return tmp, nil
}

// install puts the whole file tmp at dest, on disk: it syncs tmp, then
// links it to dest, which fails if dest is there, or with replace renames
// it over dest; then it syncs the directory. tmp is left for the caller
// to remove.
func install(tmp, dest string, replace bool) error {
	if err := syncFile(tmp); err != nil {
		return err
	}
	var err error
	if replace {
		err = os.Rename(tmp, dest)
	} else if err = linkFile(tmp, dest); errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrPermission) {
		// A file system without hard links (FAT, some network shares):
		// rename, if dest is still free.
		if _, err = os.Lstat(dest); err == nil {
			err = fs.ErrExist
		} else {
			err = os.Rename(tmp, dest)
		}
	}
	if errors.Is(err, fs.ErrExist) {
		return errExists
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(dest))
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// syncDir makes a new name in dir durable. Windows cannot open a
// directory to sync it; its renames go to disk with the file system's
// own journal.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
