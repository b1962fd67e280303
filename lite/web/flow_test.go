package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// flow is the pause and limits of queue, as Backlog gives them.
func flow(t *testing.T, q *lite.Queue, queue string) (bool, lite.Limits) {
	t.Helper()
	b, err := q.Backlog(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range b {
		if s.Queue == queue {
			return s.Paused, s.Limits
		}
	}
	return false, lite.Limits{}
}

func TestQueueFlowAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		seed(t, q, clock)
		h := handler(q, clock, web.Options{})

		t.Run("pause and resume a queue", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/api/queues/pause", url.Values{"queue": {"emails"}})
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), "{\n  \"action\": \"pause\",\n  \"queue\": \"emails\"\n}\n")
			paused, _ := flow(t, q, "emails")
			is.True(paused)
			var b []lite.QueueStats
			decode(t, get(h, "/api/backlog").Body.Bytes(), &b)
			is.True(b[0].Paused) // the API's reads show it
			is.Equal(post(h, "/api/queues/resume", url.Values{"queue": {"emails"}}).Code, http.StatusOK)
			paused, _ = flow(t, q, "emails")
			is.True(!paused)
		})

		t.Run("set limits, and lift them", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/api/queues/limits", url.Values{"queue": {"emails"}, "max_running": {"2"}, "rate": {"10"}, "per": {"1m"}})
			is.Equal(w.Code, http.StatusOK)
			var set struct {
				Queue      string
				MaxRunning int   `json:"max_running"`
				Rate       int   `json:"rate"`
				PerMS      int64 `json:"rate_per_ms"`
			}
			decode(t, w.Body.Bytes(), &set)
			is.Equal(set.MaxRunning, 2)
			is.Equal(set.PerMS, int64(60000))
			_, l := flow(t, q, "emails")
			is.Equal(l, lite.Limits{MaxRunning: 2, Rate: 10, Per: time.Minute})
			is.Equal(post(h, "/api/queues/limits", url.Values{"queue": {"emails"}}).Code, http.StatusOK)
			_, l = flow(t, q, "emails")
			is.Equal(l, lite.Limits{}) // empty fields are no limit
		})

		t.Run("bad limits are 400 and change nothing", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(q.SetLimits(t.Context(), "emails", lite.Limits{MaxRunning: 4}))
			for form, want := range map[string]string{
				"max_running=-1":            "set limits of emails: negative MaxRunning -1",
				"rate=5":                    "set limits of emails: a Rate of 5 has no Per: give both, or neither",
				"rate=1&per=1us":            "set limits of emails: a Per of 1µs is under a millisecond",
				"max_running=two":           `max_running must be a whole number, not "two"`,
				"rate=1&per=soon":           `per must be a duration such as 1s or 1m, not "soon"`,
				"max_running=1&queue=a%0Ab": `set limits of a` + "\n" + `b: queue "a\nb" contains a control character`,
			} {
				v, err := url.ParseQuery(form)
				is.NoErr(err)
				if !v.Has("queue") {
					v.Set("queue", "emails")
				}
				w := post(h, "/api/queues/limits", v)
				is.Equal(w.Code, http.StatusBadRequest) // the form
				is.Equal(apiError(t, w.Body.Bytes()), want)
			}
			_, l := flow(t, q, "emails")
			is.Equal(l, lite.Limits{MaxRunning: 4})
		})

		t.Run("an action without a queue is 400", func(t *testing.T) {
			is := is.New(t)
			for _, target := range []string{"/api/queues/pause", "/api/queues/resume"} {
				w := post(h, target, nil)
				is.Equal(w.Code, http.StatusBadRequest)
				is.Equal(apiError(t, w.Body.Bytes()), "the form field queue must name a queue")
			}
		})
	})
}

func TestQueueFlowPages(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		seed(t, q, clock)
		is.New(t).NoErr(q.SetLimits(t.Context(), "reports", lite.Limits{MaxRunning: 3, Rate: 50, Per: time.Second}))
		is.New(t).NoErr(q.Pause(t.Context(), "reports"))
		h := handler(q, clock, web.Options{})

		t.Run("the overview shows pause and limits, and offers what applies", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/").Body.String()
			reports := body[strings.Index(body, `<tr data-queue="reports">`):]
			is.True(strings.Contains(reports, `<span class="badge paused">paused</span>`))
			is.True(strings.Contains(reports, "max 3 running"))
			is.True(strings.Contains(reports, "50 per 1s"))
			is.NoErr(q.SetLimits(t.Context(), "emails", lite.Limits{Rate: 6, Per: time.Hour}))
			is.True(strings.Contains(get(h, "/").Body.String(), "6 per 1h</span>")) // not 1h0m0s
			is.NoErr(q.SetLimits(t.Context(), "emails", lite.Limits{}))
			is.True(strings.Contains(reports, `href="./queues/confirm?queue=reports&amp;action=resume"`))
			is.True(!strings.Contains(reports, "action=pause"))
			is.True(strings.Contains(reports, `href="./queues/limits?queue=reports"`))
			emails := body[strings.Index(body, `<tr data-queue="emails">`):strings.Index(body, `<tr data-queue="reports">`)]
			is.True(strings.Contains(emails, `href="./queues/confirm?queue=emails&amp;action=pause"`))
			is.True(!strings.Contains(emails, "paused"))
			is.True(!strings.Contains(emails, "running</span>")) // no limit shown
			is.True(strings.Contains(get(h, "/live").Body.String(), "max 3 running"))
		})

		t.Run("the overview shows who set each queue's limits", func(t *testing.T) {
			is := is.New(t)
			_, err := q.Declare(t.Context(), lite.Declaration{Owner: "billing-app", Limits: map[string]lite.Limits{"invoices": {MaxRunning: 2}}})
			is.NoErr(err)
			defer func() {
				_, err := q.Declare(t.Context(), lite.Declaration{Owner: "billing-app"}) // lifts them again
				is.NoErr(err)
			}()
			body := get(h, "/").Body.String()
			row := func(queue string) string {
				r := body[strings.Index(body, `<tr data-queue="`+queue+`">`):]
				return r[:strings.Index(r, "</tr>")]
			}
			is.True(strings.Contains(row("invoices"), `<span class="owner" title="who set the limits">code:billing-app</span>`))
			is.True(strings.Contains(row("reports"), `<span class="owner" title="who set the limits">hand</span>`))
			is.True(!strings.Contains(row("emails"), `class="owner"`)) // no limits, no owner
		})

		t.Run("pausing asks first, then posts the queue's name", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/queues/confirm?queue=emails&action=pause")
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.True(strings.Contains(body, `<form method="post" action="../queues/pause">`))
			is.True(strings.Contains(body, `<input type="hidden" name="queue" value="emails">`))
			paused, _ := flow(t, q, "emails")
			is.True(!paused) // asking changed nothing
			is.Equal(get(h, "/queues/confirm?queue=emails&action=drop").Code, http.StatusBadRequest)

			w = post(h, "/queues/pause", url.Values{"queue": {"emails"}})
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(w.Header().Get("Location"), "../") // back to the overview
			paused, _ = flow(t, q, "emails")
			is.True(paused)
			is.Equal(post(h, "/queues/resume", url.Values{"queue": {"emails"}}).Code, http.StatusSeeOther)
			paused, _ = flow(t, q, "emails")
			is.True(!paused)
		})

		t.Run("the limits form shows what is set and sets what is posted", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/queues/limits?queue=reports").Body.String()
			is.True(strings.Contains(body, `name="max_running" value="3"`))
			is.True(strings.Contains(body, `name="rate" value="50"`))
			is.True(strings.Contains(body, `name="per" value="1s"`))
			is.True(strings.Contains(get(h, "/queues/limits?queue=emails").Body.String(), `name="max_running" value=""`))

			w := post(h, "/queues/limits", url.Values{"queue": {"reports"}, "max_running": {"1"}})
			is.Equal(w.Code, http.StatusSeeOther)
			_, l := flow(t, q, "reports")
			is.Equal(l, lite.Limits{MaxRunning: 1})
			w = post(h, "/queues/limits", url.Values{"queue": {"reports"}, "rate": {"5"}})
			is.Equal(w.Code, http.StatusBadRequest)
			is.True(strings.Contains(w.Body.String(), "has no Per"))
			_, l = flow(t, q, "reports")
			is.Equal(l, lite.Limits{MaxRunning: 1})
		})
	})
}
