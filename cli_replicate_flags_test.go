package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestReplicationFlagsRefuseWhatTheyCannotDo(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	for _, c := range []struct {
		why  string
		args []string
		code int
	}{
		{"--from with SRC", []string{"restore", "--from", "file:///tmp/r", "copy.db"}, 2},
		{"--from with --in-place", []string{"restore", "--from", "file:///tmp/r", "--in-place"}, 2},
		{"--timestamp without --from", []string{"restore", "copy.db", "--timestamp", "2026-12-01T22:30:00Z"}, 2},
		{"a replica URL lite cannot replicate to", []string{"work", "--replicate", "s3://bucket/lite", "--", "true"}, 2},
		{"an SFTP URL without the server's host key", []string{"restore", "--from", "sftp://ada:s3cret@nas/lite"}, 2},
		{"serve --replicate without workers", []string{"serve", "--replicate", "file:///tmp/r"}, 2},
		{"a zero --replicate-every", []string{"work", "--replicate", "file:///tmp/r", "--replicate-every", "0s", "--", "true"}, 2},
		{"work --wait-for-replica without --replicate", []string{"work", "--wait-for-replica", "--", "true"}, 2},
		{"enqueue --wait-for-replica without --replicate", []string{"enqueue", "--wait-for-replica", "x"}, 2},
	} {
		t.Run("lite refuses "+c.why+" in one line", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", c.args...)
			is.Equal(r.code, c.code)
			is.Equal(strings.Count(r.stderr, "\n"), 1)
			is.True(!strings.Contains(r.stderr, "s3cret")) // a URL's password is never printed
		})
	}
}

// enqueueN enqueues n jobs on db in one run, their payloads "0" to n-1.
func enqueueN(t *testing.T, db string, n int) {
	t.Helper()
	var lines strings.Builder
	for i := range n {
		fmt.Fprintf(&lines, "{\"payload\":\"%d\"}\n", i)
	}
	mustLite(t, db, lines.String(), "enqueue", "--file", "-")
}

func TestAReplicaThatCannotBeWrittenIsRefusedAtStartInOneLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "q.db")
	mustLite(t, db, "", "enqueue", "x")
	notADir := filepath.Join(dir, "a-file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	replica := "file://" + filepath.ToSlash(notADir) + "/replica" // under a file: no one can make it
	for _, args := range [][]string{
		{"work", "--exit-when-empty", "--replicate", replica, "--", "true"},
		{"enqueue", "--replicate", replica, "y"},
	} {
		t.Run("lite "+args[0]+" says so alone, before any job", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", args...)
			is.Equal(r.code, 1)
			is.Equal(strings.Count(r.stderr, "\n"), 1) // lite's own line, no log of Litestream's
			is.True(strings.HasPrefix(r.stderr, "lite: replicate to "+replica+": "))
			is.Equal(len(listJobs(t, db)), 1) // nothing enqueued, nothing run
			is.Equal(listJobs(t, db)[0].State, "available")
		})
	}
}
