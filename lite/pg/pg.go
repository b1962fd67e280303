// Package pg runs lite on PostgreSQL. Import it for its side effect, and
// lite.Open accepts postgres:// URLs with the same API, CLI and fencing as
// on a SQLite file:
//
//	import _ "github.com/liteq/lite/lite/pg"
//
//	q, err := lite.Open(ctx, "postgres://app@db.internal/app", lite.Options{})
//
// It connects through pgx: its database/sql adapter for the queue's pool,
// so transactions stay *sql.Tx, and a native connection for LISTEN.
package pg

import (
	"context"
	"database/sql"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/liteq/lite/lite"
)

func init() {
	s := server{}
	lite.RegisterServer("postgres", s)
}

type server struct{}

func (server) Open(ctx context.Context, url string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxIdleConns(idleConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// idleConns is how many connections the pool keeps open between uses.
// database/sql keeps two: a worker's lease loop, its group commits and
// heartbeats, and the program's own enqueues use more at once, and each
// connection beyond two was closed after its use and opened again for
// the next, at the price of a server process and of preparing its
// statements anew (measured, enqueue to handler start in one process:
// p50 200 ms with two, 2 ms with this).
const idleConns = 16

// The waits between attempts to bring a dropped listener back.
const (
	firstRetry = 100 * time.Millisecond
	lastRetry  = 5 * time.Second
)

func (server) Listen(ctx context.Context, url, channel string, notify func()) error {
	retry := firstRetry
	for {
		// A failed connection is tried again and again: the server may be
		// restarting, and the worker polls meanwhile.
		_ = listen(ctx, url, channel, func() {
			retry = firstRetry // it was up: the next drop starts the waits over
			notify()           // what was sent before it listened is lost
		}, notify)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
		retry = min(2*retry, lastRetry)
	}
}

// listen holds one connection listening on channel until it fails or ctx
// ends; up runs once it listens.
func listen(ctx context.Context, url, channel string, up, notify func()) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return err
	}
	up()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		notify()
	}
}
