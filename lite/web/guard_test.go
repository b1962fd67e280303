package web_test

import (
	"fmt"
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

func TestRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		retry := fmt.Sprintf("/jobs/%d/retry", ids.dead)
		apiRetry := "/api" + retry

		t.Run("without the token the API is 401 and a page asks to log in", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			w := get(h, "/api/stats")
			is.Equal(w.Code, http.StatusUnauthorized)
			is.Equal(w.Header().Get("WWW-Authenticate"), `Bearer realm="lite"`)
			is.True(strings.Contains(apiError(t, w.Body.Bytes()), "token is required"))
			w = get(h, "/jobs")
			is.Equal(w.Code, http.StatusUnauthorized)
			is.True(strings.Contains(w.Body.String(), `<form method="post" action="./login">`))
			w = do(h, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Authorization": "Bearer wrong"}})
			is.Equal(w.Code, http.StatusUnauthorized)
			is.Equal(post(h, apiRetry, nil).Code, http.StatusUnauthorized)
			is.Equal(post(h, retry, nil).Code, http.StatusUnauthorized)
			is.Equal(state(t, q, ids.dead), lite.StateDead)
		})

		t.Run("the bearer token opens the API", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			w := do(h, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Authorization": "Bearer s3cret"}})
			is.Equal(w.Code, http.StatusOK)
		})

		t.Run("the login form sets a session cookie that is not the token", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			w := post(h, "/login", url.Values{"token": {"wrong"}})
			is.Equal(w.Code, http.StatusUnauthorized)
			is.Equal(len(w.Result().Cookies()), 0)
			w = post(h, "/login", url.Values{"token": {"s3cret"}})
			is.Equal(w.Code, http.StatusSeeOther)
			cookies := w.Result().Cookies()
			is.Equal(len(cookies), 1)
			c := cookies[0]
			is.True(c.HttpOnly)
			is.Equal(c.SameSite, http.SameSiteStrictMode)
			is.True(!strings.Contains(c.Value, "s3cret"))
			w = do(h, request{method: http.MethodGet, target: "/jobs", header: map[string]string{"Cookie": c.Name + "=" + c.Value}})
			is.Equal(w.Code, http.StatusOK)
			w = do(h, request{method: http.MethodGet, target: "/jobs", header: map[string]string{"Cookie": c.Name + "=forged"}})
			is.Equal(w.Code, http.StatusUnauthorized)
		})

		t.Run("a session ends when its browser logs out, and after its lifetime", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			login := func() string {
				t.Helper()
				c := post(h, "/login", url.Values{"token": {"s3cret"}}).Result().Cookies()[0]
				is.True(c.MaxAge > 0) // the browser forgets it too
				return c.Name + "=" + c.Value
			}
			cookie := map[string]string{"Cookie": login()}
			is.Equal(do(h, request{method: http.MethodGet, target: "/jobs", header: cookie}).Code, http.StatusOK)
			is.Equal(do(h, request{method: http.MethodPost, target: "/logout", header: cookie}).Code, http.StatusSeeOther)
			is.Equal(do(h, request{method: http.MethodGet, target: "/jobs", header: cookie}).Code, http.StatusUnauthorized) // a copy of the cookie is void

			cookie = map[string]string{"Cookie": login()}
			clock.Advance(12*time.Hour - time.Second)
			is.Equal(do(h, request{method: http.MethodGet, target: "/jobs", header: cookie}).Code, http.StatusOK)
			clock.Advance(time.Second)
			is.Equal(do(h, request{method: http.MethodGet, target: "/jobs", header: cookie}).Code, http.StatusUnauthorized)
		})

		t.Run("the bearer scheme is read whatever its case", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			for _, auth := range []string{"bearer s3cret", "BEARER s3cret"} {
				is.Equal(do(h, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Authorization": auth}}).Code, http.StatusOK)
			}
			is.Equal(do(h, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Authorization": "bearer s3cre"}}).Code, http.StatusUnauthorized)
		})

		t.Run("a Host the server does not expect is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Hosts: []string{"queue.example.com"}})
			for host, code := range map[string]int{
				"attacker.example:8080":  http.StatusMisdirectedRequest, // a name rebound to 127.0.0.1
				"queue.example.com":      http.StatusOK,
				"QUEUE.example.com:8443": http.StatusOK,
				"localhost:8080":         http.StatusOK,
				"[::1]:8080":             http.StatusOK,
			} {
				w := do(h, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Host": host}})
				is.Equal(w.Code, code) // the host
			}
			w := do(h, request{method: http.MethodPost, target: apiRetry, form: url.Values{}, header: map[string]string{"Host": "attacker.example"}})
			is.Equal(w.Code, http.StatusMisdirectedRequest)
			is.Equal(state(t, q, ids.dead), lite.StateDead)
			any := handler(q, clock, web.Options{Hosts: []string{"*"}})
			is.Equal(do(any, request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Host": "anything"}}).Code, http.StatusOK)
		})

		t.Run("a cross-origin POST is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, header := range []map[string]string{
				{"Sec-Fetch-Site": "cross-site"},
				{"Origin": "https://attacker.example"},
			} {
				for _, target := range []string{retry, apiRetry, "/purge", "/login"} {
					w := do(h, request{method: http.MethodPost, target: target, form: url.Values{"older_than": {"0s"}}, header: header})
					is.Equal(w.Code, http.StatusForbidden)
				}
			}
			is.Equal(state(t, q, ids.dead), lite.StateDead)
			w := do(h, request{method: http.MethodPost, target: apiRetry, form: url.Values{}, header: map[string]string{"Sec-Fetch-Site": "same-origin"}})
			is.Equal(w.Code, http.StatusOK) // the dashboard's own
			is.Equal(post(h, fmt.Sprintf("/api/jobs/%d/cancel", ids.dead), nil).Code, http.StatusOK)
			is.Equal(post(h, fmt.Sprintf("/api/jobs/%d/retry", ids.dead), nil).Code, http.StatusOK) // no browser headers: curl
		})

		t.Run("a GET on an action is 405 and changes nothing", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			is.Equal(post(h, fmt.Sprintf("/api/jobs/%d/cancel", ids.dead), nil).Code, http.StatusOK)
			for _, target := range []string{retry, apiRetry, "/api/purge?older_than=0s"} {
				w := get(h, target)
				is.Equal(w.Code, http.StatusMethodNotAllowed)
				is.Equal(w.Header().Get("Allow"), http.MethodPost)
			}
			is.Equal(state(t, q, ids.dead), lite.StateCancelled)
		})

		t.Run("read-only has no actions, shown or posted", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{ReadOnly: true})
			body := get(h, fmt.Sprintf("/jobs/%d", ids.dead)).Body.String()
			is.True(!strings.Contains(body, "confirm?action"))
			is.True(!strings.Contains(get(h, "/").Body.String(), `href="./purge"`))
			for _, target := range []string{retry, apiRetry, "/purge", "/api/purge"} {
				w := post(h, target, url.Values{"older_than": {"0s"}})
				is.Equal(w.Code, http.StatusForbidden)
			}
			is.Equal(get(h, fmt.Sprintf("/jobs/%d/confirm?action=retry", ids.dead)).Code, http.StatusForbidden)
			is.Equal(get(h, "/purge").Code, http.StatusForbidden)
			is.Equal(state(t, q, ids.dead), lite.StateCancelled)
			is.Equal(get(h, "/api/stats").Code, http.StatusOK) // reads still work
		})
	})
}

func TestSecurityHeaders(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{Token: "s3cret"})
		for _, target := range []string{"/", "/api/stats", "/static/app.css", "/nothing"} {
			t.Run(target, func(t *testing.T) {
				is := is.New(t)
				w := get(h, target)
				csp := w.Header().Get("Content-Security-Policy")
				is.True(strings.Contains(csp, "default-src 'none'"))
				is.True(strings.Contains(csp, "script-src 'self';")) // no 'unsafe-inline', no 'unsafe-eval'
				is.True(strings.Contains(csp, "frame-ancestors 'none'"))
				is.True(!strings.Contains(csp, "unsafe"))
				is.Equal(w.Header().Get("X-Content-Type-Options"), "nosniff")
			})
		}
	})
}
