package web_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// hostile is text a job's enqueuer or handler controls, as it would try to
// break out of the page or a terminal. lite refuses control characters in
// queue names, kinds and unique keys (hostileName), not in payloads,
// errors or worker identities.
const (
	hostileName = "<script>alert(1)</script></textarea><img src=x onerror=alert(2)>\"'javascript:alert(3)"
	hostile     = hostileName + "\x1b[2J\u202e"
)

// hostileQueue is the queue the tests name hostileName once they have
// set it up (toHostileQueue): lite refuses such a name for a new job, but
// a file from before its rule on queue names may hold one.
const hostileQueue = "hostile"

// toHostileQueue renames hostileQueue to hostileName wherever q stores a
// queue's name, as a file from before the rule on queue names holds it.
func toHostileQueue(t *testing.T, q *lite.Queue) {
	t.Helper()
	literal := "'" + strings.ReplaceAll(hostileName, "'", "''") + "'"
	for _, update := range []string{
		"update lite_jobs set queue = " + literal + " where queue = '" + hostileQueue + "'",
		"update lite_queues set queue = " + literal + " where queue = '" + hostileQueue + "'",
		"update lite_schedules set queue = " + literal + " where queue = '" + hostileQueue + "'",
		"update lite_unique set queue = " + literal + " where queue = '" + hostileQueue + "'",
		"update lite_counters set queue = " + literal + " where queue = '" + hostileQueue + "'",
	} {
		if _, err := q.DB().ExecContext(t.Context(), update); err != nil {
			t.Fatal(err)
		}
	}
}

// hostileJob enqueues a job whose every text field is hostile, leases it and
// fails it with a hostile error, so that it is dead with all of them set.
func hostileJob(t *testing.T, q *lite.Queue) int64 {
	t.Helper()
	id := enqueue(t, q, lite.NewJob{Queue: hostileQueue, Kind: hostileName, Payload: []byte(hostile), UniqueKey: hostileName, MaxAttempts: 1})
	toHostileQueue(t, q)
	leased, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{hostileName}, Max: 1, LockedBy: hostile})
	if err != nil || len(leased) != 1 {
		t.Fatalf("lease: %v", err)
	}
	if err := q.AckFailed(t.Context(), leased[0].Lease(), errors.New(hostile)); err != nil {
		t.Fatal(err)
	}
	return id
}

// hostileFlow pauses and limits the hostile queue, and sets a paused
// schedule whose name, queue and kind are hostile, so that the overview
// and the schedules page show them with their actions.
func hostileFlow(t *testing.T, q *lite.Queue) {
	t.Helper()
	ctx := t.Context()
	if err := q.Pause(ctx, hostileQueue); err != nil {
		t.Fatal(err)
	}
	if err := q.SetLimits(ctx, hostileQueue, lite.Limits{MaxRunning: 2}); err != nil {
		t.Fatal(err)
	}
	err := q.SetSchedule(ctx, lite.Schedule{Name: hostileName, Spec: "@hourly", Paused: true,
		Job: lite.NewJob{Queue: hostileQueue, Kind: hostileName, Payload: []byte(hostile)}})
	if err != nil {
		t.Fatal(err)
	}
	toHostileQueue(t, q)
}

// hostilePage gets page, which shows hostile text, and checks that none
// of it reached the page raw; it returns the page.
func hostilePage(t *testing.T, h http.Handler, page string) string {
	t.Helper()
	is := is.New(t)
	w := get(h, page)
	is.Equal(w.Code, http.StatusOK)
	body := w.Body.String()
	is.True(!strings.Contains(body, "<script>alert"))
	is.Equal(strings.Count(body, "</textarea>"), strings.Count(body, "<textarea")) // the page's own alone
	is.True(!strings.Contains(body, "<img"))
	is.True(!strings.Contains(body, `href="javascript:`))
	is.True(!strings.Contains(body, "\x1b")) // a terminal escape never passes
	is.True(!strings.Contains(body, "\u202e"))
	return body
}

func TestHostileFieldsShowAsText(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		id := hostileJob(t, q)
		hostileFlow(t, q)
		h := handler(q, clock, web.Options{})
		name := url.QueryEscape(hostileName)
		pages := []string{
			"/", "/live", "/jobs", fmt.Sprintf("/jobs/%d", id),
			fmt.Sprintf("/jobs/%d/confirm?action=retry", id),
			"/jobs?queue=" + name + "&key=" + url.QueryEscape(hostile),
			"/workers", "/schedules",
			"/queues/confirm?action=pause&queue=" + name, "/queues/limits?queue=" + name,
			"/schedules/confirm?action=remove&schedule=" + name,
		}
		for _, page := range pages {
			t.Run(page, func(t *testing.T) { hostilePage(t, h, page) })
		}
		t.Run("the job's page shows each field escaped, as text", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d", id)).Body.String()
			shown := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;javascript:alert(3)\\x1b[2J\\u202e"
			is.Equal(strings.Count(body, shown), 2) // payload, error: a dead job shows no lease
			name := "<dd>" + shown[:len(shown)-len(`\x1b[2J\u202e`)] + "</dd>"
			is.Equal(strings.Count(body, name), 3) // queue, kind, unique key
		})
		t.Run("a running job's page shows its worker escaped, as text", func(t *testing.T) {
			is := is.New(t)
			running := enqueue(t, q, lite.NewJob{Queue: "emails"}) // the hostile queue is paused
			if leased, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"emails"}, Max: 1, LockedBy: hostile}); err != nil || len(leased) != 1 {
				t.Fatalf("lease: %v", err)
			}
			body := get(h, fmt.Sprintf("/jobs/%d", running)).Body.String()
			shown := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;javascript:alert(3)\\x1b[2J\\u202e"
			is.Equal(strings.Count(body, "<dd>"+shown+"</dd>"), 1) // locked by
		})
		t.Run("the schedules page shows the schedule's name, queue and kind as text", func(t *testing.T) {
			is := is.New(t)
			body := get(h, "/schedules").Body.String()
			shown := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/textarea&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;javascript:alert(3)"
			is.Equal(strings.Count(body, "<td>"+shown+"</td>"), 2)  // name, kind
			is.Equal(strings.Count(body, ">"+shown+"</a></td>"), 1) // queue, linked
		})
		t.Run("a confirmation for a name lite never takes is refused", func(t *testing.T) {
			is := is.New(t)
			for _, page := range []string{
				"/queues/confirm?action=pause&queue=", "/queues/limits?queue=", "/schedules/confirm?action=remove&schedule=",
			} {
				w := get(h, page+url.QueryEscape(hostile))
				is.Equal(w.Code, http.StatusBadRequest)             // the page
				is.True(!strings.Contains(w.Body.String(), "\x1b")) // its name is not in the page at all
				is.True(!strings.Contains(w.Body.String(), "script&gt;"))
			}
		})
		t.Run("a hostile queue's pause posts its name back intact", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/queues/resume", url.Values{"queue": {hostileName}})
			is.Equal(w.Code, http.StatusSeeOther)
			b, err := q.Backlog(t.Context())
			is.NoErr(err)
			is.Equal(b[0].Queue, hostileName)
			is.True(!b[0].Paused)
		})
		t.Run("the API gives the fields as JSON strings", func(t *testing.T) {
			is := is.New(t)
			var j lite.Job
			decode(t, get(h, fmt.Sprintf("/api/jobs/%d", id)).Body.Bytes(), &j)
			is.Equal(j.Kind, hostileName)
			is.Equal(string(j.Payload), hostile)
			is.Equal(j.Errors[0].Error, hostile)
		})
	})
}

func TestMountedUnderAPrefix(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		mux := http.NewServeMux()
		mux.Handle("/queue/", http.StripPrefix("/queue", handler(q, clock, web.Options{})))
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "the program's own", http.StatusTeapot) })
		resolve := func(page, link string) string {
			base, _ := url.Parse("http://127.0.0.1:8080" + page)
			ref, _ := url.Parse(link)
			return base.ResolveReference(ref).Path
		}

		t.Run("links resolve under the prefix", func(t *testing.T) {
			is := is.New(t)
			w := get(mux, "/queue/")
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), `href="./static/app.css"`))
			is.Equal(resolve("/queue/", "./static/app.css"), "/queue/static/app.css")
			is.Equal(get(mux, "/queue/static/app.css").Code, http.StatusOK)
			page := fmt.Sprintf("/queue/jobs/%d", ids.dead)
			body := get(mux, page).Body.String()
			link := fmt.Sprintf("../jobs/%d/confirm?action=retry", ids.dead)
			is.True(strings.Contains(body, `href="`+link+`"`))
			is.Equal(get(mux, resolve(page, link)+"?action=retry").Code, http.StatusOK)
		})

		t.Run("an action redirects under the prefix", func(t *testing.T) {
			is := is.New(t)
			page := fmt.Sprintf("/queue/jobs/%d/retry", ids.dead)
			w := post(mux, page, nil)
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(resolve(page, w.Header().Get("Location")), fmt.Sprintf("/queue/jobs/%d", ids.dead))
			is.Equal(state(t, q, ids.dead), lite.StateAvailable)
		})

		t.Run("the API answers under the prefix, and the program keeps the rest", func(t *testing.T) {
			is := is.New(t)
			is.Equal(get(mux, "/queue/api/stats").Code, http.StatusOK)
			is.Equal(get(mux, "/api/stats").Code, http.StatusTeapot)
		})
	})
}
