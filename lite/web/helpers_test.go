package web_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// jobs are the ids of the jobs seed makes, one in each state that has an
// action.
type jobs struct{ dead, running, available int64 }

// seed enqueues a dead job (its one attempt failed), a running one (leased
// by worker-1) and an available one with a unique key, all in queue
// emails, a minute apart.
func seed(t *testing.T, q *lite.Queue, clock *litetest.Clock) jobs {
	t.Helper()
	ctx := t.Context()
	var j jobs
	j.dead = enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "bill", Payload: []byte(`{"invoice":7}`), MaxAttempts: 1})
	l := lease(t, q)
	clock.Advance(time.Minute)
	if err := q.AckFailed(ctx, l, errors.New("smtp: 451 try later")); err != nil {
		t.Fatal(err)
	}
	j.running = enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "welcome", Payload: []byte("plain text")})
	lease(t, q)
	clock.Advance(time.Minute)
	j.available = enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "welcome", Payload: []byte(`{"to":"ada"}`), UniqueKey: "welcome-ada"})
	clock.Advance(time.Minute)
	return j
}

func enqueue(t *testing.T, q *lite.Queue, j lite.NewJob) int64 {
	t.Helper()
	id, err := q.Enqueue(t.Context(), j)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// lease leases the one available job as worker-1.
func lease(t *testing.T, q *lite.Queue) lite.Lease {
	t.Helper()
	leased, err := q.Lease(t.Context(), lite.LeaseRequest{Max: 1, LockedBy: "worker-1"})
	if err != nil || len(leased) != 1 {
		t.Fatalf("lease: %v, %d jobs", err, len(leased))
	}
	return leased[0].Lease()
}

func state(t *testing.T, q *lite.Queue, id int64) lite.State {
	t.Helper()
	j, err := q.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

// request is one request to the handler, for 127.0.0.1:8080 unless its
// headers say otherwise, from a client at remote (default 127.0.0.1).
type request struct {
	method, target string
	remote         string
	form           url.Values
	header         map[string]string
}

func do(h http.Handler, r request) *httptest.ResponseRecorder {
	var body io.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	}
	req := httptest.NewRequest(r.method, r.target, body)
	req.Host = "127.0.0.1:8080"
	req.RemoteAddr = "127.0.0.1:50000"
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	if r.form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range r.header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func get(h http.Handler, target string) *httptest.ResponseRecorder {
	return do(h, request{method: http.MethodGet, target: target})
}

func post(h http.Handler, target string, form url.Values) *httptest.ResponseRecorder {
	if form == nil {
		form = url.Values{}
	}
	return do(h, request{method: http.MethodPost, target: target, form: form})
}

// handler is the web handler on q with the clock's time.
func handler(q *lite.Queue, clock *litetest.Clock, opts web.Options) http.Handler {
	opts.Now = clock.Now
	return web.Handler(q, opts)
}
