package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestWorkerRunsEveryJob(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "worker.db")
	var out bytes.Buffer
	is.NoErr(run(t.Context(), path, &out))
	is.Equal(strings.Count(out.String(), "done at generation 1"), 3)

	q, err := lite.Open(t.Context(), path, lite.Options{})
	is.NoErr(err)
	defer q.Close()
	jobs, err := q.List(t.Context(), lite.ListFilter{State: lite.StateDone})
	is.NoErr(err)
	is.Equal(len(jobs), 3)
	is.Equal(string(jobs[0].Result), "hello, ADA")
}
