package lite

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// WaitProgress waits for the job with id as Wait does, and calls progress
// with the job, read whole, each time it finds its progress, note or log
// changed while it runs: a caller can show a durable call moving. It
// looks when Wait would, at each wake-up and at the safety poll; a
// handler's reports reach the file at its worker's heartbeats, and a `lite
// work` command's at once (`lite progress`, `lite log`). progress runs on
// the waiting goroutine, and the wait goes on once it returns.
func (q *Queue) WaitProgress(ctx context.Context, id int64, progress func(*Job)) (*Job, error) {
	var last *Job
	look := func(ctx context.Context) {
		j, err := q.Get(ctx, id)
		if err != nil || j.State != StateRunning || !moved(last, j) {
			return // the wait's own read says what went wrong, or that it ended
		}
		last = j
		progress(j)
	}
	jobs, err := q.waitFor(ctx, []int64{id}, 1, look)
	if err != nil {
		return nil, fmt.Errorf("wait: %w", err)
	}
	return jobs[id], nil
}

// moved says whether j reports other progress than last did (nil: no
// report seen yet).
func moved(last, j *Job) bool {
	if last == nil {
		return j.Progress != nil || j.ProgressNote != "" || len(j.Log) > 0
	}
	return !bytes.Equal(last.Progress, j.Progress) || last.ProgressNote != j.ProgressNote || !slices.Equal(last.Log, j.Log)
}
