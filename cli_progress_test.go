package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestACommandReportsItsProgressAndLog(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		mustLite(t, db, "", "enqueue", "x")
		// $0 is lite; the job and LITE_DB come from lite work.
		script := `"$0" progress 40% converting && seq 100000 | "$0" log && "$0" log "$(printf 'last \033[2J')"`
		mustLite(t, db, "", "work", "--exit-when-empty", "--", "sh", "-c", script, liteBin)

		show := mustLite(t, db, "", "show", "1")
		is.Equal(rawUnsafe(show), "")
		is.True(strings.Contains(show, "progress:     40% converting\n"))
		is.True(strings.Contains(show, "\n  100000\n  "+strconv.Quote("last \x1b[2J")+"\n"))
		is.True(strings.Contains(mustLite(t, db, "", "ls"), "40%"))

		var j struct {
			Progress     float64  `json:"progress"`
			ProgressNote string   `json:"progress_note"`
			Log          []string `json:"log"`
		}
		is.NoErr(json.Unmarshal([]byte(mustLite(t, db, "", "--json", "show", "1")), &j))
		is.Equal(j.Progress, 0.4)
		is.Equal(j.ProgressNote, "converting")
		is.Equal(len(j.Log), lite.MaxLogLines)
		is.Equal(j.Log[0], "99902")
		is.Equal(j.Log[len(j.Log)-1], "last \x1b[2J")
		if e.name == "sqlite" {
			info, err := os.Stat(db)
			is.NoErr(err)
			is.True(info.Size() < 1<<20) // 100k lines did not grow the file
		}
	})
}

// leaseOne opens db, enqueues a job and leases it, as lite work does
// before it runs the job's command.
func leaseOne(t *testing.T, db string) (*lite.Queue, *lite.Job) {
	t.Helper()
	q, err := lite.Open(t.Context(), db, lite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if _, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "default", Kind: "x"}); err != nil {
		t.Fatal(err)
	}
	jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"default"}, LockedBy: "test"})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("lease: %d jobs, %v", len(jobs), err)
	}
	return q, jobs[0]
}

// asJobsCommand runs the binary as lite work runs a job's command: with
// the job's lease and the database in its environment.
func asJobsCommand(t *testing.T, db string, j *lite.Job) func(args ...string) result {
	return func(args ...string) result {
		cmd := exec.CommandContext(t.Context(), liteBin, args...)
		cmd.Env = append(os.Environ(), "LITE_DB="+db,
			"LITE_JOB_ID="+strconv.FormatInt(j.ID, 10),
			"LITE_JOB_GENERATION="+strconv.FormatInt(j.Generation, 10))
		return runCmd(t, cmd)
	}
}

func TestAProgressThatIsNoFractionIsRefusedWithExit2(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "lite.db")
	q, job := leaseOne(t, db)
	run := asJobsCommand(t, db, job)
	for _, value := range []string{"1e400", "-1e400", "1e400%", "NaN", "Inf", "-Inf", "-0.5", "1.5", "150%", "-1%"} {
		r := run("progress", "--", value)          // -- so that -0.5 is no flag
		is.Equal(r.code, 2)                        // a usage error
		is.Equal(strings.Count(r.stderr, "\n"), 1) // of one line
		is.True(strings.Contains(r.stderr, "a fraction is from 0 to 1"))
	}
	j, err := q.Get(t.Context(), job.ID)
	is.NoErr(err)
	is.Equal(j.Progress, json.RawMessage(nil))  // none was stored
	is.Equal(run("progress", "1e-400").code, 0) // too small a float: 0
}

func TestAStaleRunsProgressIsRefusedWithExit3(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		q, job := leaseOne(t, db)
		run := asJobsCommand(t, db, job)
		is.Equal(run("progress", "0.25").code, 0) // the lease is live

		_, err := q.ReleaseUnowned(t.Context(), job.ID)
		is.NoErr(err)
		for _, args := range [][]string{{"progress", "50%", "stale"}, {"log", "stale line"}} {
			r := run(args...)
			is.Equal(r.code, 3)
			is.True(strings.Contains(r.stderr, "no longer holds the job, so nothing was written"))
		}
		j, err := q.Get(t.Context(), job.ID)
		is.NoErr(err)
		is.Equal(string(j.Progress), "0.25")
		is.Equal(len(j.Log), 0)

		r := run("progress", "140%")
		is.Equal(r.code, 2)
		is.True(strings.Contains(r.stderr, "a fraction is from 0 to 1"))
	})
}
