package litetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/liteq/lite/lite"
)

// freshFile is the path of a new queue file in tb.TempDir(): a copy of
// one that lite created and migrated once for the whole test binary.
// Creating and migrating a file is most of the time a test's Open takes
// (about half a second under the race detector, twenty times opening the
// copy), and the copy is the same file byte for byte: lite writes nothing
// of the moment or of the options when it creates one. Should the first
// file fail, each test's Open creates its own, as without the copy.
func freshFile(tb testing.TB) string {
	path := filepath.Join(tb.TempDir(), "lite.db")
	if b := migratedFile(); b != nil {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			tb.Fatalf("litetest: %v", err)
		}
	}
	return path
}

// migratedFile is the bytes of a file lite created, migrated and closed,
// or nil if that failed.
var migratedFile = sync.OnceValue(func() []byte {
	dir, err := os.MkdirTemp("", "litetest-")
	if err != nil {
		return nil
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "lite.db")
	q, err := lite.Open(context.Background(), path, lite.Options{})
	if err != nil {
		return nil
	}
	if err := q.Close(); err != nil {
		return nil
	}
	// The last connection's close moved the log into the file: a log left
	// beside it would hold part of the schema.
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return b
})
