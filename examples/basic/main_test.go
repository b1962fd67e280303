package main

import (
	"path/filepath"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestBasicRunsEveryJob(t *testing.T) {
	is := is.New(t)
	path := filepath.Join(t.TempDir(), "basic.db")
	is.NoErr(run(t.Context(), []string{path}))

	q, err := lite.Open(t.Context(), path, lite.Options{})
	is.NoErr(err)
	defer q.Close()
	jobs, err := q.List(t.Context(), lite.ListFilter{})
	is.NoErr(err)
	is.Equal(len(jobs), 3)
	for _, j := range jobs {
		is.Equal(j.State, lite.StateDone)
	}
	is.Equal(string(jobs[1].Result), "hello, GRACE")
}
