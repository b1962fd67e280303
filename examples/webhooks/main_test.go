package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

// quiet keeps the worker's warnings about the failures these tests cause
// out of their output.
var quiet = lite.WorkerOptions{Logger: slog.New(slog.DiscardHandler)}

// onEachEngine runs test on SQLite and, when LITE_TEST_POSTGRES names a
// server, on PostgreSQL in a fresh schema: the app's SQL is written once
// for both. db is where the app's queue opens.
func onEachEngine(t *testing.T, test func(t *testing.T, db string)) {
	t.Run("sqlite", func(t *testing.T) { test(t, filepath.Join(t.TempDir(), "webhooks.db")) })
	t.Run("postgres", func(t *testing.T) {
		server := os.Getenv("LITE_TEST_POSTGRES")
		if server == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("CI=true but LITE_TEST_POSTGRES is not set: .ci/run starts the server and sets it")
			}
			t.Skip("LITE_TEST_POSTGRES is not set: the PostgreSQL engine was skipped")
		}
		test(t, freshSchema(t, server))
	})
}

// schemas numbers the schemas this process makes.
var schemas atomic.Int64

// freshSchema makes an empty schema on server, dropped when the test
// ends, and returns a URL whose connections use it.
func freshSchema(t *testing.T, server string) string {
	t.Helper()
	admin, err := sql.Open("pgx", server)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("webhooks_%d_%d", os.Getpid(), schemas.Add(1))
	if _, err := admin.ExecContext(t.Context(), "create schema "+name); err != nil {
		t.Fatal(err)
	}
	// Registered before the queue's own cleanup, so it runs after the
	// queue closed.
	t.Cleanup(func() {
		admin.Exec("drop schema " + name + " cascade")
		admin.Close()
	})
	u, err := url.Parse(server)
	if err != nil {
		t.Fatal(err)
	}
	v := u.Query()
	v.Set("search_path", name)
	u.RawQuery = v.Encode()
	return u.String()
}

// newApp is the app on a test queue in db with a fake clock.
func newApp(t *testing.T, db string) (*app, *litetest.Clock) {
	t.Helper()
	clock := litetest.NewClock(time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC))
	q, err := lite.Open(t.Context(), db, lite.Options{Now: clock.Now, Backoff: func(int) time.Duration { return time.Minute }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	if err := createSchema(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	return &app{q: q, client: http.DefaultClient, out: &bytes.Buffer{}}, clock
}

func status(t *testing.T, q *lite.Queue, event int64) string {
	t.Helper()
	var s string
	if err := q.DB().QueryRowContext(t.Context(), q.Rebind(`select status from events where id = ?`), event).Scan(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPostingAnEventEnqueuesItsDeliveryWithIt(t *testing.T) {
	onEachEngine(t, func(t *testing.T, db string) {
		is := is.New(t)
		a, _ := newApp(t, db)
		rec := httptest.NewRecorder()
		a.postEvent(rec, httptest.NewRequest("POST", "/events", strings.NewReader(`{"url": "http://r.test/in", "body": {"n": 1}}`)))
		is.Equal(rec.Code, http.StatusAccepted)
		litetest.RequireEnqueued(t, a.q, Deliver{Event: 1, URL: "http://r.test/in"}, litetest.Opts{Queue: "webhooks"})

		rec = httptest.NewRecorder()
		a.postEvent(rec, httptest.NewRequest("POST", "/events", strings.NewReader(`{"body": {}}`)))
		is.Equal(rec.Code, http.StatusBadRequest)
		litetest.RequireEnqueuedMany(t, a.q, []Deliver{{Event: 1, URL: "http://r.test/in"}}) // still only the first
	})
}

func TestAnEventsStatusCommitsWithItsJobsOutcome(t *testing.T) {
	onEachEngine(t, func(t *testing.T, db string) {
		is := is.New(t)
		a, clock := newApp(t, db)
		answer := http.StatusServiceUnavailable
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(answer) }))
		defer receiver.Close()
		w, err := newWorker(a, quiet)
		is.NoErr(err)

		id, err := a.record(t.Context(), receiver.URL, `{}`)
		is.NoErr(err)
		job := litetest.RequireEnqueued(t, a.q, Deliver{Event: id, URL: receiver.URL})

		// A 503 is worth another try: the event says when.
		ev := litetest.Work(t, w, job.ID)
		is.Equal(ev.Kind, lite.EventFailed)
		is.Equal(ev.State, lite.StateAvailable)
		is.True(ev.NextRunAt.Equal(clock.Now().Add(time.Minute)))
		is.Equal(status(t, a.q, id), "retrying")

		// It comes due; the receiver now takes it.
		answer = http.StatusOK
		clock.Advance(time.Minute)
		rep := litetest.Drain(t, w)
		is.Equal(rep.Done, 1)
		is.Equal(status(t, a.q, id), "delivered")
		litetest.RequireNotEnqueued[Alert](t, a.q)
	})
}

func TestARefusedEventIsGoneAndItsOwnerAlertedInOneCommit(t *testing.T) {
	onEachEngine(t, func(t *testing.T, db string) {
		is := is.New(t)
		a, _ := newApp(t, db)
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }))
		defer receiver.Close()
		w, err := newWorker(a, quiet)
		is.NoErr(err)
		id, err := a.record(t.Context(), receiver.URL, `{}`)
		is.NoErr(err)
		job := litetest.RequireEnqueued(t, a.q, Deliver{Event: id, URL: receiver.URL})

		ev := litetest.Work(t, w, job.ID)
		is.Equal(ev.State, lite.StateDead) // a 4xx is permanent: no attempt is wasted
		is.Equal(status(t, a.q, id), "gone")
		alert := litetest.RequireEnqueued(t, a.q, Alert{Event: id, Why: "the receiver refused the event: 410 Gone"})
		is.Equal(alert.Queue, "alerts")
	})
}

func TestAStaleWorkerWritesNoStatus(t *testing.T) {
	onEachEngine(t, func(t *testing.T, db string) {
		is := is.New(t)
		a, _ := newApp(t, db)
		release := make(chan struct{})
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { <-release }))
		defer receiver.Close()
		defer close(release)
		id, err := a.record(t.Context(), receiver.URL, `{}`)
		is.NoErr(err)
		jobs, err := a.q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"webhooks"}})
		is.NoErr(err)
		// An admin gives the job to someone else while this delivery hangs.
		_, err = a.q.ReleaseUnowned(t.Context(), jobs[0].ID)
		is.NoErr(err)
		err = a.q.Complete(t.Context(), jobs[0].Lease(), nil, func(tx *sql.Tx) error {
			_, err := tx.Exec(a.q.Rebind(`update events set status = 'delivered' where id = ?`), id)
			return err
		})
		is.True(err != nil) // the old lease's writes never land
		is.Equal(status(t, a.q, id), "pending")
	})
}

func TestTheDemoDeliversTwoEventsAndGivesUpOnOne(t *testing.T) {
	onEachEngine(t, func(t *testing.T, db string) {
		is := is.New(t)
		var out bytes.Buffer
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		is.NoErr(run(ctx, db, &out))
		is.True(strings.Contains(out.String(), "alert: event 3 is gone: the receiver refused the event: 410 Gone\n"))
		is.True(strings.HasSuffix(out.String(), "event 1: delivered\nevent 2: delivered\nevent 3: gone\n"))
	})
}
