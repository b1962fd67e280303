package lite

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// expireBatch bounds how many expired jobs one statement cancels, so that
// a large backlog gone stale holds the write lock in short turns.
const expireBatch = 1000

// expireSQL cancels available jobs whose expiry has passed (?1: now), up
// to expireBatch of them, recording why in each one's errors. Only a job
// never leased (first_leased_at is null) expires: a running one started
// in time, and so did one available again after a reclaim, a failed
// attempt, a snooze, a release or a retry, none of which clears
// first_leased_at (nor does a restore, which raises generations). Every
// lease refuses an expired job already (see notExpired); this makes it
// visible as finished and ends what waits on it.
var expireSQL = stmt{
	sqlite: `update lite_jobs set state = 'cancelled', finished_at = ` + jobTime("?1").sqlite + `,
    errors = json_insert(` + keptErrors.sqlite + `, '$[#]', json_object(
        'attempt', attempts, 'generation', generation, 'at', ?1,
        'error', 'expired: not started by ' || strftime('%Y-%m-%dT%H:%M:%fZ', expires_at / 1000.0, 'unixepoch')))
where id in (select id from lite_jobs
    where state = 'available' and first_leased_at is null and expires_at is not null and expires_at <= ?1
    order by expires_at limit ` + strconv.Itoa(expireBatch) + `)
  and state = 'available'
returning id`,
	postgres: `update lite_jobs set state = 'cancelled', finished_at = ` + jobTime("$1::bigint").postgres + `,
    errors = ` + keptErrors.postgres + ` || jsonb_build_object(
        'attempt', attempts, 'generation', generation, 'at', $1::bigint,
        'error', 'expired: not started by ' || to_char(to_timestamp(expires_at / 1000.0) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
where id = any(array(select id from lite_jobs
    where state = 'available' and first_leased_at is null and expires_at is not null and expires_at <= $1
    order by expires_at limit ` + strconv.Itoa(expireBatch) + `
    for update skip locked))
  and state = 'available'
returning id`,
}

// CancelExpired cancels every available job never started whose
// ExpiresAt has passed, with "expired: not started by TIME" in its
// errors, and returns their ids. A job leased once runs to its end, even
// when it is reclaimed or retried after its expiry. A worker runs it with
// each reclaim pass; no lease takes an expired job meanwhile.
func (q *Queue) CancelExpired(ctx context.Context) ([]int64, error) {
	var all []int64
	for {
		ids, err := q.cancelExpired(ctx)
		if err != nil {
			return all, fmt.Errorf("cancel expired: %w", classify(err))
		}
		all = append(all, ids...)
		if len(ids) < expireBatch {
			break
		}
	}
	if len(all) > 0 {
		q.finishedSome()
	}
	return all, nil
}

// cancelExpired runs one expireSQL in its own write and returns the ids
// it cancelled: the one place where a job ends by expiry, inside that
// write's transaction.
func (q *Queue) cancelExpired(ctx context.Context) ([]int64, error) {
	var ids []int64
	err := q.write(ctx, q.sql(expireSQL), func(c conn) error {
		ids = ids[:0]
		rows, err := c.QueryContext(ctx, q.sql(expireSQL), q.nowMillis())
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		return errors.Join(rows.Err(), rows.Close())
	})
	return ids, err
}
