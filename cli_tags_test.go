package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// taggedJob is what ls --json says of a job's tags and metadata.
type taggedJob struct {
	ID   int64             `json:"id"`
	Tags []string          `json:"tags"`
	Meta map[string]string `json:"meta"`
}

func TestCLITagsAndMeta(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e cliEngine) {
		is := is.New(t)
		db := e.db(t)
		ls := func(args ...string) []taggedJob {
			var jobs []taggedJob
			out := mustLite(t, db, "", append([]string{"--json", "ls", "--oldest-first"}, args...)...)
			is.NoErr(json.Unmarshal([]byte(out), &jobs))
			return jobs
		}

		mustLite(t, db, "", "enqueue", "--tag", "signup", "--tag", "eu,vip", "--meta", "traceparent=00-a-b-01",
			"--meta", "query=a=b;c", "one")
		lines := `{"payload":"two","tags":["signup"],"meta":{"k":"v"}}
{"payload":"three"}
`
		file := filepath.Join(t.TempDir(), "jobs.jsonl")
		is.NoErr(os.WriteFile(file, []byte(lines), 0o600))
		mustLite(t, db, "", "enqueue", "--tag", "import", "--file", file) // flags fill what a line leaves out

		jobs := ls()
		is.Equal(len(jobs), 3)
		is.Equal(jobs[0].Tags, []string{"eu", "signup", "vip"})
		is.Equal(jobs[0].Meta, map[string]string{"traceparent": "00-a-b-01", "query": "a=b;c"}) // one key=value a flag
		is.Equal(jobs[1].Tags, []string{"signup"})
		is.Equal(jobs[1].Meta, map[string]string{"k": "v"})
		is.Equal(jobs[2].Tags, []string{"import"})
		is.Equal(jobs[2].Meta, map[string]string(nil))

		is.Equal(len(ls("--tag", "signup")), 2)
		is.Equal(len(ls("--tag", "signup,vip")), 1)
		is.Equal(len(ls("--tag", "nope")), 0)
		table := mustLite(t, db, "", "ls", "--tag", "vip")
		is.True(strings.Contains(table, "TAGS"))
		is.True(strings.Contains(table, "eu,signup,vip"))
		is.True(strings.Contains(mustLite(t, db, "", "show", "1"), "traceparent"))

		t.Run("a bad tag is a one-line error and enqueues nothing", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "enqueue", "--tag", "a\x1b[2J", "x")
			is.True(r.code != 0)
			is.Equal(strings.Count(strings.TrimSpace(r.stderr), "\n"), 0)
			is.True(!strings.Contains(r.stderr, "\x1b")) // printed escaped
			r = runLite(t, db, "", "ls", "--tag", "a\x1b[2J")
			is.True(r.code != 0)
			is.True(!strings.Contains(r.stderr, "\x1b"))
			is.Equal(len(ls()), 3)
		})

		t.Run("a metadata key of lite's own is a usage error and enqueues nothing", func(t *testing.T) {
			is := is.New(t)
			r := runLite(t, db, "", "enqueue", "--meta", "lite.state=done", "x")
			is.Equal(r.code, 2)
			is.True(strings.Contains(r.stderr, `"lite.state"`))
			r = runLite(t, db, `{"payload":"x","meta":{"lite.job":"1"}}`+"\n", "enqueue", "--file", "-")
			is.Equal(r.code, 2) // a file's line too
			is.True(strings.Contains(r.stderr, `"lite.job"`))
			is.Equal(len(ls()), 3)
		})
	})
}
