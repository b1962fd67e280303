package lite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// leaseWithoutSync reports whether a lease may commit without syncing: on
// a file Open set to FULL. A file with NORMAL syncs no commit already, and
// on New's caller-owned pool lite does not know the level to restore.
func (q *Queue) leaseWithoutSync() bool {
	return !q.engine.onServer() && q.owned && q.opts.Synchronous == SyncFull
}

// underNormalSync runs lease, whose statement is query, in a transaction on the writer that commits
// with synchronous=NORMAL, then sets the writer back to FULL before anyone
// else may use it: the connection stays held throughout, so no enqueue or
// ack ever commits at the lower level. SQLite refuses to change the level
// inside a transaction, hence the pragmas around it.
//
// A lease needs no sync to be safe. Its commit is in the WAL in order, and
// the next FULL commit (an ack, an enqueue) syncs the WAL file, this
// commit's frames with it; so an ack that survives a power loss implies its
// lease did. If the power goes before any later FULL commit, the lease is
// lost and the job is available again at its old generation, as after any
// crash of the worker: fencing refuses whatever the lost lease's holder
// still writes, and the job runs again. Skipping the sync takes one fsync
// (1.8 to 3.4 ms on this machine) off the latency from enqueue to start.
func (q *Queue) underNormalSync(ctx context.Context, query string, lease func(queryer) error) error {
	ctx, err := uncancelled(ctx)
	if err != nil {
		return err
	}
	// Prepared before the writer is held, which preparing would wait for,
	// so that the transaction reuses the statement rather than parse it.
	if _, err := q.stmts.prepare(ctx, query); err != nil {
		return err
	}
	c, err := q.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "pragma synchronous = normal"); err != nil {
		return err
	}
	err = func() error {
		tx, err := c.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		defer tx.Rollback()
		if err := lease(txConn{tx: tx, stmts: &q.stmts}); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	}()
	if _, restoreErr := c.ExecContext(ctx, "pragma synchronous = full"); restoreErr != nil {
		// A writer left at NORMAL would commit acks unsynced: the pool
		// drops it, and the next connection opens with the DSN's FULL.
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		return errors.Join(err, fmt.Errorf("restore synchronous = full: %w", restoreErr))
	}
	return err
}
