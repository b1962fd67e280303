package lite

import (
	"context"
	"fmt"
)

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
	// As on a file, Open's writes (migrations) run to their end once begun.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	db, err := s.Open(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	q := &Queue{engine: enginePostgres, server: s, dsn: dsn, opts: opts, w: db, r: db, app: db, owned: true, stmts: stmtCache{db: db}}
	if !clockGiven {
		clock, err := newServerClock(ctx, db)
		if err != nil {
			db.Close()
			return nil, err
		}
		q.opts.Now = clock.now
	}
	if err := q.migratePostgres(ctx); err != nil {
		q.Close()
		return nil, err
	}
	return q, nil
}
