package lite

import (
	"context"
	"encoding/json"
	"fmt"
)

var previewsSQL = stmt{
	sqlite:   `select id, substr(payload, 1, ?1) from lite_jobs where id in (select value from json_each(?2))`,
	postgres: `select id, substring(payload from 1 for $1) from lite_jobs where id in (select jsonb_array_elements_text($2::jsonb)::bigint)`,
}

// Previews reads the first n bytes of the payload of each job of ids, for
// a listing that shows a glimpse of each (List with OmitBodies reads
// none): a page of large jobs then costs n bytes a job. A job that no
// longer exists has no entry.
func (q *Queue) Previews(ctx context.Context, ids []int64, n int) (map[int64][]byte, error) {
	list, _ := json.Marshal(ids) // []int64 always marshals
	rows, err := q.r.QueryContext(ctx, q.sql(previewsSQL), n, string(list))
	if err != nil {
		return nil, fmt.Errorf("previews: %w", classify(err))
	}
	defer rows.Close()
	out := make(map[int64][]byte, len(ids))
	for rows.Next() {
		var (
			id int64
			p  []byte
		)
		if err := rows.Scan(&id, &p); err != nil {
			return nil, fmt.Errorf("previews: %w", classify(err))
		}
		out[id] = p
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("previews: %w", classify(err))
	}
	return out, nil
}
