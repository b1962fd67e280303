package web_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestAHandlerWithoutATokenServesThisMachineOnly(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		open := handler(q, clock, web.Options{})
		far := "203.0.113.7:4000"

		t.Run("a client off loopback is refused, whatever Host and forwarding headers it sends", func(t *testing.T) {
			is := is.New(t)
			for _, r := range []request{
				{method: http.MethodGet, target: "/api/stats", remote: far, header: map[string]string{"Host": "localhost"}},
				{method: http.MethodGet, target: "/", remote: far, header: map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-Ip": "127.0.0.1"}},
				{method: http.MethodPost, target: "/api/queues/pause", remote: far, form: url.Values{"queue": {"emails"}}},
				{method: http.MethodPost, target: fmt.Sprintf("/api/jobs/%d/cancel", ids.running), remote: "[2001:db8::1]:4000", form: url.Values{}},
				{method: http.MethodPost, target: "/api/purge", remote: far, form: url.Values{"state": {"dead"}}},
			} {
				w := do(open, r)
				is.Equal(w.Code, http.StatusForbidden)
				is.True(strings.Contains(w.Body.String(), "without a token the server answers clients on this machine only"))
			}
			paused, _ := flow(t, q, "emails")
			is.True(!paused)
			is.Equal(state(t, q, ids.running), lite.StateRunning)
			is.Equal(state(t, q, ids.dead), lite.StateDead) // not purged
		})

		t.Run("a client on a loopback address is served", func(t *testing.T) {
			is := is.New(t)
			for _, remote := range []string{"127.0.0.1:4000", "127.8.9.10:4000", "[::1]:4000"} {
				is.Equal(do(open, request{method: http.MethodGet, target: "/api/stats", remote: remote}).Code, http.StatusOK)
			}
		})

		t.Run("with a token a client off loopback that gives it is served", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			w := do(h, request{method: http.MethodGet, target: "/api/stats", remote: far,
				header: map[string]string{"Authorization": "Bearer s3cret"}})
			is.Equal(w.Code, http.StatusOK)
		})

		t.Run("a client on a Unix socket is served", func(t *testing.T) {
			is := is.New(t)
			dir, err := os.MkdirTemp("", "lite-web") // short: a socket's path has a small limit
			is.NoErr(err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			sock := filepath.Join(dir, "s")
			ln, err := net.Listen("unix", sock)
			is.NoErr(err)
			srv := &http.Server{Handler: open}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", sock)
			}}}
			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://localhost/api/stats", nil)
			is.NoErr(err)
			resp, err := client.Do(req)
			is.NoErr(err)
			resp.Body.Close()
			is.Equal(resp.StatusCode, http.StatusOK)
		})

		t.Run("the refusal of another host names the option that allows it", func(t *testing.T) {
			is := is.New(t)
			r := request{method: http.MethodGet, target: "/api/stats", header: map[string]string{"Host": "queue.example"}}
			w := do(open, r)
			is.Equal(w.Code, http.StatusMisdirectedRequest)
			is.True(strings.Contains(apiError(t, w.Body.Bytes()), "Options.Hosts"))
			is.True(!strings.Contains(w.Body.String(), "--allow-host")) // a library has no flags
			w = do(handler(q, clock, web.Options{HostsSetting: "--allow-host"}), r)
			is.True(strings.Contains(apiError(t, w.Body.Bytes()), "--allow-host")) // as lite serve says it
		})
	})
}
