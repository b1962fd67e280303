package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// jobsFile writes n job lines to a new file and returns its path.
func jobsFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"payload":"job %d"}`+"\n", i)
	}
	file := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestEnqueueFileOffATerminalPrintsOneFinalCount(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	mustLite(t, db, "", "enqueue", "x") // the file exists: no "created" line
	r := runLite(t, db, "", "enqueue", "--file", jobsFile(t, 2500))
	is.Equal(r.code, 0)
	is.Equal(r.stdout, "enqueued 2500 jobs (0 duplicates skipped)\n")
	is.Equal(r.stderr, "") // no bar, no count rewriting itself, into a log
}
