package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestJobsPageRoundTwo(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock) // dead (1), running (2), available (3), a minute apart
		later := enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "digest", Payload: []byte(strings.Repeat("x", 500)), Delay: time.Hour})
		h := handler(q, clock, web.Options{})

		t.Run("a row shows the payload's start, the last error, run at and finished", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/jobs").Body.String()
			is.True(strings.Contains(body, `<code>{&#34;invoice&#34;:7}</code>`)) // escaped
			is.True(strings.Contains(body, "smtp: 451 try later"))
			is.True(strings.Contains(body, "<code>"+strings.Repeat("x", 60)+"…</code>")) // cut
			is.True(strings.Contains(body, `<td class="scheduled">scheduled</td>`))      // run_at ahead
			is.Equal(strings.Count(body, `<td class="scheduled">`), 1)                   // only that one
		})

		t.Run("paging offers first, previous and next", func(t *testing.T) {
			is := is.New(t)
			first := get(h, "/jobs?limit=1").Body.String()
			is.True(!strings.Contains(first, "Previous page"))
			is.True(strings.Contains(first, fmt.Sprintf(`href="./jobs?before=%d&amp;limit=1"`, later)))
			third := get(h, fmt.Sprintf("/jobs?limit=1&before=%d", ids.available)).Body.String()
			is.True(strings.Contains(third, fmt.Sprintf(`href="./jobs/%d"`, ids.running)))
			is.True(strings.Contains(third, `class="first" href="./jobs?limit=1"`))
			is.True(strings.Contains(third, fmt.Sprintf(`class="prev" href="./jobs?before=%d&amp;limit=1"`, later))) // the page of job 3
			second := get(h, fmt.Sprintf("/jobs?limit=1&before=%d", later)).Body.String()
			is.True(strings.Contains(second, `class="prev" href="./jobs?limit=1"`)) // the first page
		})

		t.Run("a job page shows its wait and run, and scheduled when its run_at is ahead", func(t *testing.T) {
			is := is.New(t)
			dead := get(h, fmt.Sprintf("/jobs/%d", ids.dead)).Body.String()
			is.True(strings.Contains(dead, `<dd class="wait">0s from run at`)) // leased at once
			is.True(strings.Contains(dead, `<dd class="run">1m0s</dd>`))       // failed a minute later
			is.True(!strings.Contains(dead, "<h2>Lease</h2>"))                 // finished: no lease box
			running := get(h, fmt.Sprintf("/jobs/%d", ids.running)).Body.String()
			is.True(strings.Contains(running, `<dd class="run">2m0s so far</dd>`))
			is.True(strings.Contains(get(h, fmt.Sprintf("/jobs/%d", later)).Body.String(), `<span class="state scheduled">scheduled</span>`))
		})

		t.Run("the overview shows totals from the counters, and an emptied queue stays", func(t *testing.T) {
			is := is.New(t)
			_, err := q.Purge(t.Context(), clock.Now().Add(time.Hour))
			is.NoErr(err)
			enqueue(t, q, lite.NewJob{Queue: "gone"})
			_, err = q.Bulk(t.Context(), lite.BulkDelete, lite.Filter{Queue: "gone"})
			is.NoErr(err)
			_, err = q.Bulk(t.Context(), lite.BulkCancel, lite.Filter{Queue: "emails", States: []lite.State{lite.StateAvailable}})
			is.NoErr(err)
			body := get(h, "/").Body.String()
			is.True(strings.Contains(body, "1 dead, 2 cancelled, 0 retried")) // the dead job is purged; its count stays
		})
	})
}

func TestWorkersPageShowsEachWorkersRunningJobsAndPid(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		ids := seed(t, q, clock) // job 2 runs, leased by worker-1
		for i, identity := range []string{"worker-1", "box:4242:abcd1234"} {
			_, err := q.DB().ExecContext(t.Context(), `insert into lite_workers (id, identity, queues, kinds, started_at, seen_at, stale_after_ms, slots)
values ($1, $2, '[]', '[]', $3, $3, 60000, $4)`, fmt.Sprint(i), identity, clock.Now().UnixMilli(), 4*i)
			is.NoErr(err)
		}
		body := get(handler(q, clock, web.Options{}), "/workers").Body.String()
		is.True(strings.Contains(body, fmt.Sprintf(`<td class="running">1 <a href="./jobs/%d">%d</a> welcome</td>`, ids.running, ids.running)))
		is.True(strings.Contains(body, `<td class="pid">4242</td>`))
		is.True(strings.Contains(body, `<td class="running">0</td>`))    // the other runs nothing
		is.True(strings.Contains(body, `<td class="slots">1 of —</td>`)) // a worker that did not say its slots
		is.True(strings.Contains(body, `<td class="slots">0 of 4</td>`))
	})
}
