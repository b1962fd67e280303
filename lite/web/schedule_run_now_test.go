package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestRunAScheduleNow(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		nightly(t, q)

		t.Run("the page asks first, and the posted form enqueues one job and leaves the ticks alone", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/schedules").Body.String()
			is.True(strings.Contains(body, `href="./schedules/confirm?schedule=nightly&amp;action=run"`))
			is.True(strings.Contains(get(h, "/schedules/confirm?schedule=nightly&action=run").Body.String(), "Enqueue this schedule"))
			before, _ := schedule(t, q, "nightly")
			is.Equal(post(h, "/schedules/run", url.Values{"schedule": {"nightly"}}).Code, http.StatusSeeOther)
			jobs, err := q.List(t.Context(), lite.ListFilter{Queue: "reports"})
			is.NoErr(err)
			is.Equal(len(jobs), 1)
			is.True(!jobs[0].RunAt.After(clock.Now())) // now, not at the tick
			after, _ := schedule(t, q, "nightly")
			is.Equal(after.NextRunAt, before.NextRunAt) // the ticks stay
			is.Equal(after.LastRunAt, before.LastRunAt)
		})

		t.Run("the API runs it, refuses a GET and an unknown name", func(t *testing.T) {
			is := is.New(t)
			is.Equal(post(h, "/api/schedules/run", url.Values{"schedule": {"nightly"}}).Code, http.StatusOK)
			is.Equal(get(h, "/api/schedules/run?schedule=nightly").Code, http.StatusMethodNotAllowed)
			is.Equal(post(h, "/api/schedules/run", url.Values{"schedule": {"nope"}}).Code, http.StatusNotFound)
			is.Equal(post(handler(q, clock, web.Options{ReadOnly: true}), "/api/schedules/run", url.Values{"schedule": {"nightly"}}).Code, http.StatusForbidden)
		})
	})
}
