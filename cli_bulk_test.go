package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestBulkCommands(t *testing.T) {
	t.Parallel()
	t.Run("retry, cancel and delete act on what their flags match, and a dry run changes nothing", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "lite.db")
		for _, q := range []string{"a", "a", "a", "b"} {
			mustLite(t, db, "", "enqueue", "--queue", q, "--kind", "k", "{}")
		}
		is.Equal(mustLite(t, db, "", "cancel", "--queue", "a", "--dry-run"), "would cancel 3 jobs (dry run: nothing changed)\n")
		is.Equal(mustLite(t, db, "", "cancel", "--queue", "a", "--kind", "k"), "cancelled 3 jobs\n")
		is.Equal(mustLite(t, db, "", "retry", "--state", "cancelled", "--queue", "a", "--dry-run"), "would retry 3 jobs (dry run: nothing changed)\n")
		is.Equal(liteJSON(t, db, "", "retry", "--state", "cancelled"), map[string]any{"action": "retry", "count": 3.0, "dry_run": false})
		is.Equal(mustLite(t, db, "", "delete", "--queue", "b"), "deleted 1 jobs\n")
		is.Equal(mustLite(t, db, "", "delete", "--all", "--dry-run"), "would delete 3 jobs (dry run: nothing changed)\n")
	})

	t.Run("--tag narrows to the jobs carrying every tag given", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "lite.db")
		mustLite(t, db, "", "enqueue", "--tag", "eu,vip", "{}")
		mustLite(t, db, "", "enqueue", "--tag", "eu", "{}")
		mustLite(t, db, "", "enqueue", "{}")
		is.Equal(mustLite(t, db, "", "cancel", "--tag", "eu", "--dry-run"), "would cancel 2 jobs (dry run: nothing changed)\n")
		is.Equal(mustLite(t, db, "", "cancel", "--tag", "eu", "--tag", "vip"), "cancelled 1 jobs\n")
		is.Equal(mustLite(t, db, "", "cancel", "--tag", "eu,vip", "--dry-run"), "would cancel 0 jobs (dry run: nothing changed)\n")
	})

	t.Run("bad input is a usage error", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "lite.db")
		mustLite(t, db, "", "enqueue", "{}")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"retry"}, "retry: give a job id, or filter flags"},
			{[]string{"cancel", "1", "--queue", "q"}, "cancel: give a job id or filter flags, not both"},
			{[]string{"delete"}, "delete: give filter flags"},
			{[]string{"delete", "--state", "running"}, `it applies to available, done, dead or cancelled jobs, not "running"`},
			{[]string{"retry", "--older-than=-1h"}, "--older-than -1h0m0s is negative"},
		} {
			is := is.New(t)
			r := runLite(t, db, "", c.args...)
			is.Equal(r.code, 2)                         // a usage error
			is.True(strings.Contains(r.stderr, c.want)) // says what is wrong
			is.Equal(strings.Count(r.stderr, "\n"), 1)  // in one line
		}
	})
}
