package lite_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestQueueNames(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, name := range []string{"bad queue name!", "a,b", `"mail"`, strings.Repeat("q", lite.MaxQueueNameChars+1), strings.Repeat("q", 3000),
			"x\u034f",    // a grapheme joiner shows nothing: it would look like x
			"\u0301a",    // an accent on nothing
			"1\u0301",    // an accent on a digit
			"mu\u0308ll", // decomposed: it would look like the composed müll, another queue
			"\u3164",     // a Hangul filler is a letter that shows nothing
			"a\u115f",
		} {
			t.Run("a new job, limit or schedule on queue "+name[:min(len(name), 20)]+" is refused and stores nothing", func(t *testing.T) {
				is := is.New(t)
				q, _ := e.mustOpen(t, nil)
				_, err := q.Enqueue(t.Context(), lite.NewJob{Queue: name})
				is.True(errors.Is(err, lite.ErrInvalid))
				_, err = q.EnqueueBatch(t.Context(), []lite.NewJob{{}, {Queue: name}})
				is.True(errors.Is(err, lite.ErrInvalid))
				_, err = q.Enqueue(t.Context(), lite.NewJob{Callback: &lite.Callback{Queue: name, Kind: "cb"}})
				is.True(errors.Is(err, lite.ErrInvalid))
				is.Equal(countJobs(t, q), 0)

				is.True(errors.Is(q.SetLimits(t.Context(), name, lite.Limits{MaxRunning: 1}), lite.ErrInvalid))
				_, err = q.Declare(t.Context(), lite.Declaration{Owner: "app", Limits: map[string]lite.Limits{name: {MaxRunning: 1}}})
				is.True(errors.Is(err, lite.ErrInvalid))
				err = q.SetSchedule(t.Context(), lite.Schedule{Name: "s", Spec: "@hourly", Job: lite.NewJob{Queue: name}})
				is.True(errors.Is(err, lite.ErrInvalid))
				stats, err := q.Stats(t.Context())
				is.NoErr(err)
				is.Equal(len(stats), 0) // no queue came to be
			})
		}

		t.Run("the refusal says which character a queue's name cannot have", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			_, err := q.Enqueue(t.Context(), lite.NewJob{Queue: "bad queue name!"})
			is.Equal(err.Error(), `enqueue bad queue name!: queue "bad queue name!" has ' ': a queue's name has letters, digits and ._:-/ only`)
			_, err = q.Enqueue(t.Context(), lite.NewJob{Queue: strings.Repeat("q", 3000)})
			is.True(strings.HasSuffix(err.Error(), ": queue name of 3000 characters: a queue's name has at most 128"))
		})

		t.Run("a queue name of up to 128 letters and digits of any script and ._:-/ is taken", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			for _, name := range []string{"邮件.müll", "ก\u0e31", "emails:v2/eu-west_1", strings.Repeat("é", lite.MaxQueueNameChars), "default"} {
				id := mustEnqueue(t, q, lite.NewJob{Queue: name})
				is.Equal(mustGet(t, q, id).Queue, name)
				is.NoErr(q.SetLimits(t.Context(), name, lite.Limits{MaxRunning: 2}))
			}
		})

		t.Run("a queue named before the rule can still be leased, listed, paused and limited no further", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "old"})
			// why: a file written before the rule holds such a name.
			_, err := q.DB().ExecContext(t.Context(), `update lite_jobs set queue = 'old queue!'`)
			is.NoErr(err)
			is.NoErr(q.Pause(t.Context(), "old queue!"))
			is.NoErr(q.Resume(t.Context(), "old queue!"))
			stats, err := q.Stats(t.Context())
			is.NoErr(err)
			is.Equal(stats[0].Queue, "old queue!")
			j := mustLeaseOne(t, q, "old queue!")
			is.Equal(j.ID, id)
			is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
			is.Equal(mustGet(t, q, id).State, lite.StateDone)

			// Limited before the rule, it can be set free, never limited anew.
			_, err = q.DB().ExecContext(t.Context(), `insert into lite_queues (queue, max_running) values ('old queue!', 2)`)
			is.NoErr(err)
			is.True(errors.Is(q.SetLimits(t.Context(), "old queue!", lite.Limits{MaxRunning: 1}), lite.ErrInvalid))
			is.NoErr(q.SetLimits(t.Context(), "old queue!", lite.Limits{}))
			stats, err = q.Stats(t.Context())
			is.NoErr(err)
			is.Equal(stats[0].Limits, lite.Limits{})
		})
	})
}
