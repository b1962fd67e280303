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

// nightly sets a schedule that fires at 03:00 UTC into queue reports.
func nightly(t *testing.T, q *lite.Queue) {
	t.Helper()
	err := q.SetSchedule(t.Context(), lite.Schedule{Name: "nightly", Spec: "0 3 * * *", Job: lite.NewJob{Queue: "reports", Kind: "report"}})
	if err != nil {
		t.Fatal(err)
	}
}

// schedule is the schedule named name, and whether there is one.
func schedule(t *testing.T, q *lite.Queue, name string) (lite.Schedule, bool) {
	t.Helper()
	list, err := q.Schedules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return lite.Schedule{}, false
}

func TestSchedulesAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})

		t.Run("no schedules is an empty list", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/api/schedules")
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), "[]\n")
		})

		nightly(t, q)
		t.Run("schedules are lite schedule ls --json's", func(t *testing.T) {
			is := is.New(t)
			var list []lite.Schedule
			decode(t, get(h, "/api/schedules").Body.Bytes(), &list)
			is.Equal(len(list), 1)
			is.Equal(list[0].Name, "nightly")
			is.Equal(list[0].Job.Queue, "reports")
			is.Equal(list[0].NextRunAt, time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
		})

		t.Run("pause, resume and remove a schedule", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/api/schedules/pause", url.Values{"schedule": {"nightly"}})
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), "{\n  \"action\": \"pause\",\n  \"schedule\": \"nightly\"\n}\n")
			s, _ := schedule(t, q, "nightly")
			is.True(s.Paused)
			is.Equal(post(h, "/api/schedules/resume", url.Values{"schedule": {"nightly"}}).Code, http.StatusOK)
			s, _ = schedule(t, q, "nightly")
			is.True(!s.Paused)
			is.Equal(post(h, "/api/schedules/remove", url.Values{"schedule": {"nightly"}}).Code, http.StatusOK)
			_, ok := schedule(t, q, "nightly")
			is.True(!ok)
		})

		t.Run("an unknown schedule is 404", func(t *testing.T) {
			is := is.New(t)
			for _, action := range []string{"pause", "resume", "remove"} {
				w := post(h, "/api/schedules/"+action, url.Values{"schedule": {"nightly"}})
				is.Equal(w.Code, http.StatusNotFound) // the action
				is.True(strings.Contains(apiError(t, w.Body.Bytes()), "no such schedule"))
			}
			w := post(h, "/api/schedules/pause", nil)
			is.Equal(w.Code, http.StatusBadRequest)
			is.Equal(apiError(t, w.Body.Bytes()), "the form field schedule must name a schedule")
		})

		t.Run("the retention policy is lite retention --json's", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: time.Hour, Dead: lite.KeepForever}))
			w := get(h, "/api/retention")
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), "{\n  \"done_ms\": 3600000,\n  \"cancelled_ms\": 86400000,\n  \"dead_ms\": null\n}\n")
		})

		t.Run("set the retention of the states given", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/api/retention", url.Values{"done_ms": {"default"}, "cancelled_ms": {"forever"}})
			is.Equal(w.Code, http.StatusOK)
			is.Equal(w.Body.String(), "{\n  \"done_ms\": 86400000,\n  \"cancelled_ms\": null,\n  \"dead_ms\": null\n}\n")
			is.Equal(post(h, "/api/retention", url.Values{"dead_ms": {"7200000"}}).Code, http.StatusOK)
			r, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(r, lite.Retention{Done: lite.DefaultRetainDone, Cancelled: lite.KeepForever, Dead: 2 * time.Hour})
		})

		t.Run("a bad retention is 400 and changes nothing", func(t *testing.T) {
			is := is.New(t)
			before, err := q.Retention(t.Context())
			is.NoErr(err)
			for form, want := range map[string]string{
				"done_ms=1h":                 `done_ms must be milliseconds, forever or default, not "1h"`,
				"done_ms=1000&dead_ms=-1000": "set retention: dead -1s is not a time to keep jobs for: use at least 1ms, or KeepForever",
			} {
				v, err := url.ParseQuery(form)
				is.NoErr(err)
				w := post(h, "/api/retention", v)
				is.Equal(w.Code, http.StatusBadRequest) // the form
				is.Equal(apiError(t, w.Body.Bytes()), want)
			}
			after, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(after, before)
		})
	})
}

func TestSchedulesPage(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		nightly(t, q)
		is.New(t).NoErr(q.SetSchedule(t.Context(), lite.Schedule{Name: "berlin", Spec: "@hourly", TimeZone: "Europe/Berlin",
			Job: lite.NewJob{Queue: "reports", Kind: "sweep"}, Paused: true}))
		is.New(t).NoErr(q.SetRetention(t.Context(), lite.Retention{Dead: lite.KeepForever}))
		_, err := q.Declare(t.Context(), lite.Declaration{Owner: "billing-app", Schedules: []lite.Schedule{
			{Name: "invoice", Spec: "@hourly", Job: lite.NewJob{Queue: "billing", Kind: "invoice"}}}})
		is.New(t).NoErr(err)

		t.Run("each schedule's owner: hand, or code and the declaration's owner", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/schedules").Body.String()
			is.True(strings.Contains(body, `<td class="owner">code:billing-app</td>`))
			row := body[strings.Index(body, `<tr data-schedule="nightly">`):]
			is.True(strings.Contains(row[:strings.Index(row, "</tr>")], `<td class="owner">hand</td>`))
		})

		t.Run("each schedule's fields and the actions that apply", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/schedules")
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			row := body[strings.Index(body, `<tr data-schedule="nightly">`):]
			row = row[:strings.Index(row, "</tr>")]
			for _, cell := range []string{
				"<td>nightly</td>", "<td><code>0 3 * * *</code></td>", "<td>UTC</td>",
				`<a href="./jobs?queue=reports">reports</a>`, "<td>report</td>",
				"<td>2026-12-01 03:00:00Z (in 15h0m0s)</td>", "<td>—</td>", "<td>active</td>",
				`href="./schedules/confirm?schedule=nightly&amp;action=pause"`,
				`href="./schedules/confirm?schedule=nightly&amp;action=remove"`,
			} {
				if !strings.Contains(row, cell) {
					t.Errorf("no %q in %s", cell, row)
				}
			}
			is.True(!strings.Contains(row, "action=resume"))
			berlin := body[strings.Index(body, `<tr data-schedule="berlin">`):]
			berlin = berlin[:strings.Index(berlin, "</tr>")]
			is.True(strings.Contains(berlin, "<td>Europe/Berlin</td>"))
			is.True(strings.Contains(berlin, `<span class="badge paused">paused</span>`))
			is.True(strings.Contains(berlin, "action=resume"))
			is.True(!strings.Contains(berlin, "action=pause"))
		})

		t.Run("the retention policy shows each state's", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/schedules").Body.String()
			is.True(strings.Contains(body, `<dt class="done">done</dt><dd>1d</dd>`))
			is.True(strings.Contains(body, `<dt class="dead">dead</dt><dd>forever</dd>`))
		})

		t.Run("removing asks first, then returns to the schedules", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/schedules/confirm?schedule=nightly&action=remove")
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			is.True(strings.Contains(body, `<form method="post" action="../schedules/remove">`))
			is.True(strings.Contains(body, `<input type="hidden" name="schedule" value="nightly">`))
			_, ok := schedule(t, q, "nightly")
			is.True(ok) // asking removed nothing
			w = post(h, "/schedules/remove", url.Values{"schedule": {"nightly"}})
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(w.Header().Get("Location"), "../schedules")
			_, ok = schedule(t, q, "nightly")
			is.True(!ok)
			w = post(h, "/schedules/remove", url.Values{"schedule": {"nightly"}})
			is.Equal(w.Code, http.StatusNotFound) // already gone
		})
	})
}
