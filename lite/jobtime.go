package lite

// jobTime is a time a statement writes to a job (a lease, a heartbeat, a
// finish, the next run after an attempt), now being the time the
// statement was given, raised to the job's own latest time before it:
// its lease's (leased_at), or with no lease recorded its creation's. The
// time given may be a moment behind the one that wrote leased_at or
// created_at: a reading taken before a wait for a lock, another process's
// reading, a server's clock read over a slow round trip. A job's own
// times never go backwards, whatever clock wrote each of them.
func jobTime(now string) stmt {
	return stmt{
		sqlite:   `max(` + now + `, coalesce(leased_at, created_at))`,
		postgres: `greatest(` + now + `, coalesce(leased_at, created_at))`,
	}
}
