package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestRetentionShowsAndSetsTheFilesPolicy(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		is.Equal(mustLite(t, db, "", "retention"), "done       1d\ncancelled  1d\ndead       7d\n") // the defaults
		set := "done       36h (hand)\ncancelled  forever (hand)\ndead       30d (hand)\n"
		is.Equal(mustLite(t, db, "", "retention", "--done", "36h", "--dead", "30d", "--cancelled", "forever"), set)
		is.Equal(mustLite(t, db, "", "retention", "--done", "36h"), set) // a flag not given keeps its value
		is.Equal(liteJSON(t, db, "", "retention"), map[string]any{"done_ms": 129600000.0, "cancelled_ms": nil, "dead_ms": 2592000000.0,
			"owners": map[string]any{"done": "", "cancelled": "", "dead": ""}})

		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--done", "0d"}, `--done "0d" is not a positive duration`},
			{[]string{"--done=-3d"}, `--done "-3d" is not a positive duration`},
			{[]string{"--done", "106751d"}, `--done "106751d" is too long: at most 106750d, or forever`},
			{[]string{"--done", "99999999d"}, `--done "99999999d" is too long`},
			{[]string{"--done", "99999999999999999999d"}, `--done "99999999999999999999d" is too long`},
			{[]string{"--done", "99999999h"}, `--done "99999999h" is too long`},
			{[]string{"--dead", "nope"}, `--dead "nope" is not a duration`},
			{[]string{"--dead", "3xd"}, `--dead "3xd" is not a duration`},
			{[]string{"--done=-5h"}, `--done "-5h" is not a positive duration`},
			{[]string{"--done", "1h", "--dead", "7 days"}, `--dead "7 days" is not a duration`}, // the good flag is not stored either
			{[]string{"--cancelled", "500us"}, `--cancelled "500us" is under a millisecond`},
			{[]string{"--done", ""}, `--done is empty`}, // --done "$KEEP" with KEEP unset
			{[]string{"--done", "1h", "--dead="}, `--dead is empty`},
		} {
			t.Run(strings.Join(c.args, " ")+" is refused and changes nothing", func(t *testing.T) {
				is := is.New(t)
				r := runLite(t, db, "", append([]string{"retention"}, c.args...)...)
				is.Equal(r.code, 2)
				is.Equal(strings.Count(r.stderr, "\n"), 1) // one line
				is.True(strings.HasPrefix(r.stderr, "lite: retention: --"))
				is.True(strings.Contains(r.stderr, c.want)) // the true reason
				is.Equal(r.stdout, "")
				is.Equal(mustLite(t, db, "", "retention"), set)
			})
		}
		is.Equal(mustLite(t, db, "", "retention", "--done", "default", "--cancelled", "default", "--dead", "default"),
			"done       1d\ncancelled  1d\ndead       7d\n")
	})
}

func TestVacuumPrintsTheSizeBeforeAndAfter(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		out := mustLite(t, db, "", "vacuum")
		what := `the file`
		if e.name == "postgres" {
			what = `lite_jobs \(PostgreSQL keeps the space for its own reuse\)`
		}
		is.True(regexp.MustCompile(`^vacuumed ` + what + `: [0-9.]+ [KMG]?i?B before, [0-9.]+ [KMG]?i?B after\n$`).MatchString(out))
		sizes := liteJSON(t, db, "", "vacuum").(map[string]any)
		is.True(sizes["before"].(float64) > 0)
		is.True(sizes["after"].(float64) > 0)
		is.Equal(len(listJobs(t, db)), 1) // the job is kept
	})
}

func TestVacuumRefusesWhileAWorkerRunsUnlessForced(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	mustLite(t, db, "", "enqueue", "x")
	startWorker(t, db, nil, "-q", "idle", "--", "true")
	eventually(t, "the worker announces itself", func() bool {
		return strings.Contains(mustLite(t, db, "", "workers"), "idle")
	})

	r := runLite(t, db, "", "vacuum")
	is.Equal(r.code, 1)
	is.Equal(r.stderr, "lite: vacuum: workers are running: 1 live on the file would lose their leases during the rewrite; stop them first (lite workers lists them), or give --force\n")
	is.Equal(r.stdout, "")

	is.True(strings.HasPrefix(mustLite(t, db, "", "vacuum", "--force"), "vacuumed the file: "))
	is.Equal(len(listJobs(t, db)), 1)
}

// A worker run from cron, exiting when its queues are empty, never lives
// to its periodic clean: it cleans once before it exits, so a file worked
// only that way keeps no done job past its retention.
func TestWorkExitingWhenEmptyAppliesTheRetention(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		last := strings.TrimSpace(mustLite(t, db, "", "enqueue", "x"))
		mustLite(t, db, "", "retention", "--done", "1ms")
		for range 5 {
			mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
			for _, j := range listJobs(t, db) {
				// The run's own job may be under 1 ms old at its clean; every
				// earlier one is past it.
				is.Equal(fmt.Sprint(j.ID), last)
				is.Equal(j.State, "done")
			}
			last = strings.TrimSpace(mustLite(t, db, "", "enqueue", "x"))
		}
		mustLite(t, db, "", "work", "--exit-when-empty", "--", "true")
		mustLite(t, db, "", "work", "--exit-when-empty", "--", "true") // nothing to run, still cleans
		is.Equal(len(listJobs(t, db)), 0)
	})
}
