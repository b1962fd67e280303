package lite

import "database/sql"

// SetIdleHook lets tests know when a worker's loop has gone to sleep.
func SetIdleHook(w *Worker, hook func()) { w.idleHook = hook }

// PollOnly makes a worker find other processes' commits by polling alone,
// as it does where the WAL cannot be watched.
func PollOnly(w *Worker) { w.noWAL = true }

// WriterDB is the queue's own writer connection, for tests that set a
// pragma on it (pragmas belong to one connection).
func WriterDB(q *Queue) *sql.DB { return q.w }
