// Command webhooks is a webhook sender built on lite, the shape of a real
// application: an HTTP endpoint records an event in its own table and
// enqueues its delivery in the same transaction; a worker delivers each
// event with per-queue concurrency, and records the event's status in the
// same fenced commit as the job's outcome: delivered with the ack,
// retrying or gone with the failure. The test (main_test.go) checks it
// with lite's test kit, on SQLite and on PostgreSQL.
//
// Its own SQL is written once for both engines: queries with ?
// placeholders go through Queue.Rebind, and the table's id column is the
// one thing its schema spells per engine (Queue.Engine).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/liteq/lite/lite"
	_ "github.com/liteq/lite/lite/pg" // for a postgres:// WEBHOOKS_DB
)

// Deliver is a delivery job: the type names its kind, so an enqueue and
// its handler cannot disagree on it.
type Deliver struct {
	Event int64  `json:"event"`
	URL   string `json:"url"`
}

func (Deliver) Kind() string { return "deliver_webhook" }

// JobDefaults puts deliveries in their own queue, with five attempts.
func (Deliver) JobDefaults() lite.NewJob { return lite.NewJob{Queue: "webhooks", MaxAttempts: 5} }

// Alert tells the owner of an endpoint that gave up on its events.
type Alert struct {
	Event int64  `json:"event"`
	Why   string `json:"why"`
}

func (Alert) Kind() string { return "alert_owner" }

func (Alert) JobDefaults() lite.NewJob { return lite.NewJob{Queue: "alerts"} }

// schema is the app's table. Its id is the engine's own: a rowid on
// SQLite, an identity on PostgreSQL, where integer is 32 bits.
const schema = `create table if not exists events (
    id     %s,
    url    text not null,
    body   text not null,
    status text not null default 'pending',
    detail text not null default ''
)`

var idColumn = map[string]string{
	"sqlite":   "integer primary key",
	"postgres": "bigint generated always as identity primary key",
}

// createSchema makes the app's table in q's engine.
func createSchema(ctx context.Context, q *lite.Queue) error {
	_, err := q.DB().ExecContext(ctx, fmt.Sprintf(schema, idColumn[q.Engine()]))
	return err
}

// app holds what the endpoint and the handlers share.
type app struct {
	q      *lite.Queue
	client *http.Client
	out    io.Writer
	mu     sync.Mutex // serializes out
}

// postEvent records an event and enqueues its delivery in one
// transaction: the event exists with its job, or neither does.
func (a *app) postEvent(w http.ResponseWriter, r *http.Request) {
	var in struct {
		URL  string          `json:"url"`
		Body json.RawMessage `json:"body"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.URL == "" {
		http.Error(w, `{"error":"want {\"url\": ..., \"body\": ...}"}`, http.StatusBadRequest)
		return
	}
	id, err := a.record(r.Context(), in.URL, string(in.Body))
	if err != nil {
		http.Error(w, `{"error":"could not record the event"}`, http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	json.NewEncoder(w).Encode(map[string]int64{"event": id})
}

func (a *app) record(ctx context.Context, url, body string) (int64, error) {
	tx, err := a.q.DB().BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	var id int64
	if err := tx.QueryRowContext(ctx, a.q.Rebind(`insert into events (url, body) values (?, ?) returning id`), url, body).Scan(&id); err != nil {
		return 0, err
	}
	if _, err := lite.EnqueueArgsTx(ctx, a.q, tx, Deliver{Event: id, URL: url}); err != nil {
		return 0, err
	}
	return id, tx.Commit()
}

// errRefused is a receiver's 4xx: sending the same event again cannot help.
var errRefused = errors.New("the receiver refused the event")

// deliver posts an event. Its status is written with the job's outcome,
// under the job's lease: a worker that lost the job writes nothing.
func (a *app) deliver(ctx context.Context, job *lite.Job, d Deliver) error {
	var body string
	if err := a.q.DB().QueryRowContext(ctx, a.q.Rebind(`select body from events where id = ?`), d.Event).Scan(&body); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, strings.NewReader(body))
	if err != nil {
		return lite.Permanent(err)
	}
	// The generation tells the receiver which run sent this: it only
	// grows, so a receiver can drop a send from a run that was replaced.
	req.Header.Set("Lite-Generation", fmt.Sprint(job.Generation))
	lite.CommitWithFailure(ctx, func(tx *sql.Tx, f lite.Failure) error {
		status, detail := "retrying", "next try at "+f.NextRunAt.Format(time.RFC3339)
		if f.State == lite.StateDead {
			status, detail = "gone", f.Err.Error()
			// The owner hears of it exactly when the event is given up on.
			if _, err := lite.EnqueueArgsTx(ctx, a.q, tx, Alert{Event: d.Event, Why: detail}); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, a.q.Rebind(`update events set status = ?, detail = ? where id = ?`), status, detail, d.Event)
		return err
	})
	resp, err := a.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode >= 500:
		return fmt.Errorf("the receiver answered %s", resp.Status)
	case resp.StatusCode >= 400:
		return lite.Permanent(fmt.Errorf("%w: %s", errRefused, resp.Status))
	}
	lite.SetResult(ctx, []byte(resp.Status))
	lite.CommitWithAck(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, a.q.Rebind(`update events set status = 'delivered', detail = ? where id = ?`), resp.Status, d.Event)
		return err
	})
	return nil
}

func (a *app) alert(ctx context.Context, _ *lite.Job, al Alert) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err := fmt.Fprintf(a.out, "alert: event %d is gone: %s\n", al.Event, al.Why)
	return err
}

// newWorker serves deliveries and alerts, each queue with slots of its
// own: a backlog of deliveries never holds up an alert.
func newWorker(a *app, opts lite.WorkerOptions) (*lite.Worker, error) {
	opts.Queues = map[string]lite.QueueConfig{"webhooks": {Concurrency: 8}, "alerts": {Concurrency: 1}}
	w, err := lite.NewWorker(a.q, opts)
	if err != nil {
		return nil, err
	}
	lite.HandleArgs(w, a.deliver)
	lite.HandleArgs(w, a.alert)
	return w, nil
}

// main runs on the file webhooks.db, or on the database WEBHOOKS_DB
// names (a path, or a postgres:// URL).
func main() {
	db := os.Getenv("WEBHOOKS_DB")
	if db == "" {
		db = "webhooks.db"
	}
	if err := run(context.Background(), db, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

// run posts three events, to a receiver that takes them and to one that
// refuses them, and works until each is delivered or gone.
func run(ctx context.Context, db string, out io.Writer) error {
	q, err := lite.Open(ctx, db, lite.Options{Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		return err
	}
	defer q.Close()
	if err := createSchema(ctx, q); err != nil {
		return err
	}
	a := &app{q: q, client: &http.Client{Timeout: 5 * time.Second}, out: out}
	receiver, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/refuse") {
			w.WriteHeader(http.StatusGone)
		}
	}))
	if err != nil {
		return err
	}
	defer receiver.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("POST /events", a.postEvent)
	api, err := serve(mux)
	if err != nil {
		return err
	}
	defer api.Close()
	for _, target := range []string{"/ok", "/ok", "/refuse"} {
		body := fmt.Sprintf(`{"url": "http://%s%s", "body": {"order": 7}}`, receiver.Addr(), target)
		resp, err := http.Post("http://"+api.Addr()+"/events", "application/json", strings.NewReader(body))
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("post event: %s", resp.Status)
		}
	}

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Two deliveries and the alert for the refused one end the demo.
	var left atomic.Int32
	left.Store(3)
	w, err := newWorker(a, lite.WorkerOptions{OnEvent: func(ev lite.Event) {
		if ev.Kind == lite.EventDone && left.Add(-1) == 0 {
			stop()
		}
	}})
	if err != nil {
		return err
	}
	if err := w.Run(ctx); err != nil {
		return err
	}
	rows, err := q.DB().QueryContext(context.Background(), `select id, status from events order by id`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id     int64
			status string
		)
		if err := rows.Scan(&id, &status); err != nil {
			return err
		}
		fmt.Fprintf(out, "event %d: %s\n", id, status)
	}
	return rows.Err()
}

// server is an HTTP server on a loopback port of its own.
type server struct {
	ln  net.Listener
	srv *http.Server
}

func serve(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{ln: ln, srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *server) Addr() string { return s.ln.Addr().String() }
func (s *server) Close() error { return s.srv.Close() }
