package cmd

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestServeRefusesANonLoopbackAddressWithoutAToken(t *testing.T) {
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // were it to serve, it would stop at once rather than hang the test
	var out strings.Builder
	err := Run(ctx, []string{"--db", db, "serve", "--addr", "0.0.0.0:0"}, Env{Stdout: &out, Stderr: &out})
	is.True(err != nil)
	is.Equal(err.Error(), "serve: --addr 0.0.0.0:0 is not a loopback address: give a --token (or LITE_TOKEN), or listen on 127.0.0.1")
	is.Equal(ExitCode(err), 2)
	_, statErr := os.Stat(db)
	is.True(os.IsNotExist(statErr)) // refused before the file was made
	err = Run(ctx, []string{"--db", db, "serve", "--addr", "0.0.0.0:0", "--token", "s3cret"}, Env{Stdout: &out, Stderr: &out})
	is.True(err != nil)
	is.Equal(err.Error(), "serve: --addr 0.0.0.0:0 is not a loopback address: its --token must be at least 16 characters, not 6 (e.g. openssl rand -hex 16)")
	is.Equal(ExitCode(err), 2)
	_, statErr = os.Stat(db)
	is.True(os.IsNotExist(statErr)) // a short token is refused as no token is
	for host, want := range map[string]bool{"127.0.0.1": true, "::1": true, "localhost": true, "": false, "0.0.0.0": false, "10.0.0.7": false, "example.com": false} {
		is.Equal(loopback(host), want) // the host
	}
}

func TestServeWithATokenListensAnywhereAndStopsWhenItsContextEnds(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, done := startServe(t, ctx, "--db", filepath.Join(t.TempDir(), "q.db"), "serve", "--addr", "0.0.0.0:0", "--token", "0123456789abcdef")
	u, err := url.Parse(base)
	is.NoErr(err)
	resp, err := http.Get("http://127.0.0.1:" + u.Port() + "/api/stats")
	is.NoErr(err)
	resp.Body.Close()
	is.Equal(resp.StatusCode, http.StatusUnauthorized) // the token is asked for
	cancel()
	is.NoErr(<-done) // a graceful stop
}

func TestServeRunsWorkersAndCountsTheirOutcomes(t *testing.T) {
	is := is.New(t)
	db := filepath.Join(t.TempDir(), "q.db")
	q, err := lite.Open(t.Context(), db, lite.Options{})
	is.NoErr(err)
	_, err = q.Enqueue(t.Context(), lite.NewJob{Queue: "mail"})
	is.NoErr(err)
	is.NoErr(q.Close())

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	base, done := startServe(t, ctx, "--db", db, "serve", "--addr", "127.0.0.1:0", "-c", "1", "--", "true")
	// The job runs on the worker's own schedule: wait for its outcome.
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		body = getBody(t, base+"metrics")
		if strings.Contains(body, `lite_worker_events_total{event="done",queue="mail"} 1`) {
			break
		}
	}
	is.True(strings.Contains(body, `lite_worker_events_total{event="started",queue="mail"} 1`))
	is.True(strings.Contains(body, `lite_worker_events_total{event="done",queue="mail"} 1`))
	cancel()
	is.NoErr(<-done) // a graceful stop
}

// startServe runs lite with args until ctx ends, and returns the URL it
// serves at, from its first line, and where Run's error will come.
func startServe(t *testing.T, ctx context.Context, args ...string) (base string, done <-chan error) {
	t.Helper()
	logR, logW := io.Pipe()
	errs := make(chan error, 1)
	go func() {
		errs <- Run(ctx, args, Env{Stdout: io.Discard, Stderr: logW})
		logW.Close()
	}()
	log := bufio.NewReader(logR)
	first, err := log.ReadString('\n')
	if strings.HasPrefix(first, "lite: created new database ") {
		first, err = log.ReadString('\n') // a file it made: said first
	}
	if err != nil {
		t.Fatalf("serve's first line: %v (%v)", err, <-errs)
	}
	go func() { _, _ = io.Copy(io.Discard, log) }()
	base, ok := strings.CutPrefix(strings.TrimSpace(first), "lite: serving ")
	if !ok {
		t.Fatalf("serve's first line: %q", first)
	}
	return base, errs
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
