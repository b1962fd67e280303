package lite

import (
	"context"
	"fmt"
	"time"
)

// connectTimeout bounds connecting to a server and reading its clock, when
// the caller's context allows longer.
const connectTimeout = 30 * time.Second

// openServer opens a queue on a database server: one pool serves lite's
// statements and the caller's transactions alike, since a server runs
// many writers at once and has no write lock for them to queue behind.
func openServer(ctx context.Context, dsn string, opts Options) (*Queue, error) {
	clockGiven := opts.Now != nil
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	s, err := serverFor(serverScheme(dsn))
	if err != nil {
		return nil, err
	}
	// Connecting and reading the clock write nothing: a signal, or the
	// caller's deadline, may end them (a server that stopped answering
	// would hold them forever).
	connectCtx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	db, err := s.Open(connectCtx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	q := &Queue{engine: enginePostgres, server: s, dsn: dsn, opts: opts, w: db, r: db, app: db, owned: true, stmts: stmtCache{db: db}}
	if !clockGiven {
		clock, err := newServerClock(connectCtx, db)
		if err != nil {
			db.Close()
			return nil, err
		}
		q.opts.Now = clock.now
	}
	// As on a file, Open's writes (migrations) run to their end once begun.
	if err := ctx.Err(); err != nil {
		db.Close()
		return nil, err
	}
	if err := q.migratePostgres(context.WithoutCancel(ctx)); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}
