package lite_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// tagged is typed args whose kind tags its jobs by default.
type tagged struct{ N int }

func (tagged) Kind() string             { return "tagged" }
func (tagged) JobDefaults() lite.NewJob { return lite.NewJob{Tags: []string{"typed"}} }
func ids(jobs []*lite.Job) (out []int64) {
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestTagsAndMeta(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		meta := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "é": "ü"}

		t.Run("a job keeps the tags and metadata it was enqueued with, on every path", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			j := lite.NewJob{Tags: []string{"b", "a", "b"}, Meta: meta}
			var got []int64
			id, err := q.Enqueue(ctx, j)
			is.NoErr(err)
			got = append(got, id)
			tx, err := q.DB().BeginTx(ctx, nil)
			is.NoErr(err)
			id, err = q.EnqueueTx(ctx, tx, j)
			is.NoErr(err)
			is.NoErr(tx.Commit())
			got = append(got, id)
			many, err := q.EnqueueBatch(ctx, []lite.NewJob{j, j}) // one statement
			is.NoErr(err)
			keyed := j
			keyed.UniqueKey = "k"
			each, err := q.EnqueueBatch(ctx, []lite.NewJob{keyed, j}) // one statement each
			is.NoErr(err)
			for _, e := range append(many, each...) {
				got = append(got, e.ID)
			}
			for _, id := range got {
				job := mustGet(t, q, id)
				is.Equal(job.Tags, []string{"a", "b"}) // sorted, each once
				is.Equal(job.Meta, meta)
			}
			id, err = lite.EnqueueArgs(ctx, q, tagged{1})
			is.NoErr(err)
			is.Equal(mustGet(t, q, id).Tags, []string{"typed"}) // the kind's default
			id, err = lite.EnqueueArgs(ctx, q, tagged{2}, lite.NewJob{Tags: []string{"mine"}})
			is.NoErr(err)
			is.Equal(mustGet(t, q, id).Tags, []string{"mine"})
		})

		t.Run("a job without tags or metadata has none", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			job := mustGet(t, q, mustEnqueue(t, q, lite.NewJob{}))
			is.Equal(job.Tags, nil)
			is.Equal(job.Meta, nil)
		})

		t.Run("a worker's handler sees the job's metadata", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			var seen map[string]string
			runWith(t, q, lite.WorkerOptions{}, "m", func(_ context.Context, j *lite.Job) error { seen = j.Meta; return nil })
			is.Equal(seen, nil)
			id := mustEnqueue(t, q, lite.NewJob{Kind: "m", Meta: meta})
			w, err := lite.NewWorker(q, lite.WorkerOptions{})
			is.NoErr(err)
			w.Handle("m", func(_ context.Context, j *lite.Job) error { seen = j.Meta; return nil })
			_, err = w.RunJob(t.Context(), id)
			is.NoErr(err)
			is.Equal(seen, meta) // the lease reads it
		})

		t.Run("bad tags and metadata are refused, and nothing is written", func(t *testing.T) {
			q, _ := e.mustOpen(t, nil)
			many := make([]string, lite.MaxTags+1)
			for i := range many {
				many[i] = strings.Repeat("t", i+1)
			}
			for name, j := range map[string]lite.NewJob{
				"an empty tag":              {Tags: []string{""}},
				"a tag with a comma":        {Tags: []string{"a,b"}},
				"a tag with a control":      {Tags: []string{"a\x1b[31m"}},
				"a tag too long":            {Tags: []string{strings.Repeat("x", lite.MaxTagBytes+1)}},
				"too many tags":             {Tags: many},
				"an empty metadata key":     {Meta: map[string]string{"": "v"}},
				"a key of lite's own":       {Meta: map[string]string{"lite.state": "done"}},
				"a value that is not UTF-8": {Meta: map[string]string{"k": "\xff"}},
				"metadata too large":        {Meta: map[string]string{"k": strings.Repeat("v", lite.MaxMetaBytes)}},
			} {
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					_, err := q.Enqueue(t.Context(), j)
					is.True(err != nil)
					_, err = q.EnqueueBatch(t.Context(), []lite.NewJob{{}, j})
					is.True(err != nil)
					jobs, err := q.List(t.Context(), lite.ListFilter{})
					is.NoErr(err)
					is.Equal(len(jobs), 0)
				})
			}
			t.Run("metadata at the limit is kept", func(t *testing.T) {
				is := is.New(t)
				v := strings.Repeat("v", lite.MaxMetaBytes-len(`{"k":""}`))
				id, err := q.Enqueue(t.Context(), lite.NewJob{Meta: map[string]string{"k": v}})
				is.NoErr(err)
				is.Equal(mustGet(t, q, id).Meta["k"], v)
			})
			t.Run("too large is ErrTooLarge", func(t *testing.T) {
				is := is.New(t)
				_, err := q.Enqueue(t.Context(), lite.NewJob{Meta: map[string]string{"k": strings.Repeat("v", lite.MaxMetaBytes)}})
				is.True(errors.Is(err, lite.ErrTooLarge))
			})
		})

		t.Run("a list by tags finds the jobs that carry every one", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			a := mustEnqueue(t, q, lite.NewJob{Tags: []string{"a"}})
			ab := mustEnqueue(t, q, lite.NewJob{Tags: []string{"a", "b"}})
			mustEnqueue(t, q, lite.NewJob{Tags: []string{"b"}})
			mustEnqueue(t, q, lite.NewJob{Tags: []string{"ab"}})
			mustEnqueue(t, q, lite.NewJob{})
			list := func(f lite.ListFilter) []int64 {
				jobs, err := q.List(t.Context(), f)
				is.NoErr(err)
				return ids(jobs)
			}
			is.Equal(list(lite.ListFilter{Tags: []string{"a"}}), []int64{a, ab})
			is.Equal(list(lite.ListFilter{Tags: []string{"b", "a"}}), []int64{ab})
			is.Equal(list(lite.ListFilter{Tags: []string{"a"}, Newest: true}), []int64{ab, a})
			is.Equal(list(lite.ListFilter{Tags: []string{"c"}}), []int64(nil))
			is.Equal(len(list(lite.ListFilter{})), 5)
			running := mustLeaseOne(t, q, lite.DefaultQueue) // the list of running jobs reads another index
			is.Equal(list(lite.ListFilter{State: lite.StateRunning, Tags: []string{"a"}}), []int64{running.ID})
			_, err := q.List(t.Context(), lite.ListFilter{Tags: []string{"a,b"}})
			is.True(err != nil) // a tag no job can carry is a mistake, not an empty page
		})
	})
}
