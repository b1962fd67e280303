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

// flowAction is one of the queue and schedule actions, with a form that
// would change something if it were let through.
type flowAction struct {
	target string
	form   url.Values
	// read says that a GET of target is a read (the limits form, the
	// retention policy), which answers and changes nothing.
	read bool
}

// flowActions are every queue and schedule action, in the API and the
// pages, each posting for queue emails or schedule nightly, and the
// API's setting of the retention.
func flowActions() []flowAction {
	var out []flowAction
	for _, prefix := range []string{"/api", ""} {
		out = append(out,
			flowAction{target: prefix + "/queues/pause", form: url.Values{"queue": {"emails"}}},
			flowAction{target: prefix + "/queues/resume", form: url.Values{"queue": {"emails"}}},
			flowAction{target: prefix + "/queues/limits", form: url.Values{"queue": {"emails"}, "max_running": {"1"}}, read: prefix == ""},
			flowAction{target: prefix + "/schedules/pause", form: url.Values{"schedule": {"nightly"}}},
			flowAction{target: prefix + "/schedules/resume", form: url.Values{"schedule": {"nightly"}}},
			flowAction{target: prefix + "/schedules/remove", form: url.Values{"schedule": {"nightly"}}},
		)
	}
	return append(out, flowAction{target: "/api/retention", form: url.Values{"done_ms": {"1000"}}, read: true})
}

func TestFlowActionRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		seed(t, q, clock)
		nightly(t, q)
		// unchanged checks that no refused action landed: the queue is
		// neither paused nor limited, the schedule there and running, the
		// retention the default.
		unchanged := func(t *testing.T) {
			t.Helper()
			is := is.New(t)
			paused, l := flow(t, q, "emails")
			is.True(!paused)
			is.Equal(l, lite.Limits{})
			s, ok := schedule(t, q, "nightly")
			is.True(ok)
			is.True(!s.Paused)
			r, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(r.Done, lite.DefaultRetainDone)
		}

		t.Run("a GET on an action is 405", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, a := range flowActions() {
				w := get(h, a.target+"?"+a.form.Encode())
				if a.read {
					is.Equal(w.Code, http.StatusOK) // a read, which sets nothing
					continue
				}
				is.Equal(w.Code, http.StatusMethodNotAllowed) // the action
				is.Equal(w.Header().Get("Allow"), http.MethodPost)
			}
			unchanged(t)
		})

		t.Run("a cross-origin POST is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, a := range flowActions() {
				w := do(h, request{method: http.MethodPost, target: a.target, form: a.form, header: map[string]string{"Sec-Fetch-Site": "cross-site"}})
				is.Equal(w.Code, http.StatusForbidden)
				w = do(h, request{method: http.MethodPost, target: a.target, form: a.form, header: map[string]string{"Origin": "https://attacker.example"}})
				is.Equal(w.Code, http.StatusForbidden)
			}
			unchanged(t)
		})

		t.Run("a Host the server does not expect is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, a := range flowActions() {
				w := do(h, request{method: http.MethodPost, target: a.target, form: a.form, header: map[string]string{"Host": "attacker.example"}})
				is.Equal(w.Code, http.StatusMisdirectedRequest)
			}
			unchanged(t)
		})

		t.Run("without the token an action is 401", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			for _, a := range flowActions() {
				is.Equal(post(h, a.target, a.form).Code, http.StatusUnauthorized)
			}
			unchanged(t)
		})

		t.Run("read-only has no queue or schedule actions, shown or posted", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{ReadOnly: true})
			for _, a := range flowActions() {
				is.Equal(post(h, a.target, a.form).Code, http.StatusForbidden) // the action
			}
			unchanged(t)
			for _, page := range []string{"/", "/live", "/schedules"} {
				w := get(h, page)
				is.Equal(w.Code, http.StatusOK) // the page still shows
				is.True(!strings.Contains(w.Body.String(), "confirm?"))
				is.True(!strings.Contains(w.Body.String(), "queues/limits"))
			}
			for _, page := range []string{
				"/queues/confirm?queue=emails&action=pause", "/queues/limits?queue=emails",
				"/schedules/confirm?schedule=nightly&action=remove",
			} {
				is.Equal(get(h, page).Code, http.StatusForbidden) // the page
			}
			is.Equal(get(h, "/api/schedules").Code, http.StatusOK) // reads still work
		})
	})
}
