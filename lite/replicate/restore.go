package replicate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/google/uuid"
	"github.com/liteq/lite/lite"
)

// RestoreOptions tune Restore; the zero value restores the latest state.
type RestoreOptions struct {
	// Timestamp restores the replica as it was at that time, not the
	// latest.
	Timestamp time.Time
	// Restore is what lite.Restore is given for the fencing step.
	Restore lite.RestoreOptions
}

// Restore puts the replica at url (its latest state, or that of
// opts.Timestamp) at path, fenced as lite.Restore fences a backup: every
// id and generation issued from now on is above any the lost file handed
// out, and its running jobs are available again. A database at path is
// replaced only if no process has it open (see lite.Restore).
func Restore(ctx context.Context, url, path string, opts RestoreOptions) (lite.FenceReport, error) {
	rep, err := restore(ctx, url, path, opts)
	if err != nil {
		return rep, fmt.Errorf("restore %s from %s: %w", lite.Redact(path), Redact(url), err)
	}
	return rep, nil
}

func restore(ctx context.Context, url, path string, opts RestoreOptions) (lite.FenceReport, error) {
	client, err := newClient(url)
	if err != nil {
		return lite.FenceReport{}, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return lite.FenceReport{}, err
	}
	// Litestream writes the replica's pages to a file of its own, which
	// lite.Restore then copies, fences and moves into place.
	tmp := fmt.Sprintf("%s.replica-%s", abs, uuid.NewString()[:8])
	defer removeAll(tmp, litestream.TXIDPath(tmp))
	ro := litestream.NewRestoreOptions()
	ro.OutputPath = tmp
	ro.Timestamp = opts.Timestamp
	ro.IntegrityCheck = litestream.IntegrityCheckQuick
	err = litestream.NewReplicaWithClient(nil, client).Restore(ctx, ro)
	if errors.Is(err, litestream.ErrTxNotAvailable) || errors.Is(err, litestream.ErrNoSnapshots) {
		return lite.FenceReport{}, fmt.Errorf("%w: the replica holds no state of the file (at that time)", err)
	}
	if err != nil {
		return lite.FenceReport{}, err
	}
	rep, err := lite.Restore(ctx, tmp, abs, opts.Restore)
	if err != nil {
		return rep, err
	}
	// Litestream's state beside the file is of the lost one: left there,
	// the next replicator would take it for the restored file's.
	return rep, os.RemoveAll(metaDir(abs))
}

// metaDir is where Litestream keeps its state of the file at path.
func metaDir(path string) string {
	dir, name := filepath.Split(path)
	return filepath.Join(dir, "."+name+litestream.MetaDirSuffix)
}

func removeAll(paths ...string) {
	for _, p := range paths {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(p + suffix)
		}
	}
}
