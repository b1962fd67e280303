package lite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// minutely is the schedule that puts one job in the queue each simulated
// minute, fired by hand as a running worker's firing loop would.
var minutely = lite.Schedule{Name: "report", Spec: "* * * * *",
	Job: lite.NewJob{Queue: "minutely", Kind: "tick", Payload: fmt.Appendf(nil, `{"report":"%0200d"}`, 0)}}

// fireMinutely fires the schedule's tick that has come and returns the
// job it enqueued: exactly one per simulated minute.
func fireMinutely(ctx context.Context, q *lite.Queue) (int64, error) {
	n, err := q.FireSchedules(ctx)
	if err != nil {
		return 0, err
	}
	if n != 1 {
		return 0, fmt.Errorf("a minute fired %d ticks, want 1", n)
	}
	var id int64
	err = q.DB().QueryRowContext(ctx, "select max(id) from lite_jobs").Scan(&id)
	return id, err
}

// monthFileLimit is the size the file stays under after a month with the
// default retention: a day of minutely jobs (1,440) with their indexes.
const monthFileLimit = 2 << 20

// A month of an edge box: a schedule firing every minute, a worker every ten, the
// cleaner every hour, all on the fake clock. The file stays small, every
// job runs exactly once, and none is deleted before its day is up. Under
// the race detector and with -short it simulates three days: still
// days past the retention, so the cleaner runs in its steady state.
func TestAMonthOfMinutelyJobsKeepsTheFileSmallAndLosesNothing(t *testing.T) {
	is := is.New(t)
	ctx := t.Context()
	days := 30
	if testing.Short() || raceEnabled { // the race detector makes the month take minutes
		days = 3
	}
	clock := newFakeClock()
	q := mustOpenOpts(t, filepath.Join(t.TempDir(), "month.db"), lite.Options{Now: clock.Now, Synchronous: lite.SyncNormal})
	w, err := lite.NewWorker(q, lite.WorkerOptions{NoCleaning: true, Concurrency: 16})
	is.NoErr(err)
	is.NoErr(q.SetSchedule(ctx, minutely))
	var (
		mu  sync.Mutex
		ran = map[int64]int{}
	)
	w.Handle("tick", func(_ context.Context, j *lite.Job) error {
		mu.Lock()
		defer mu.Unlock()
		ran[j.ID]++
		return nil
	})
	// A job finishes within the ten minutes after it was enqueued; the
	// ids count up with the minutes.
	var ids []int64
	finished := map[int64]time.Time{}
	for minute := range days * 24 * 60 {
		clock.Advance(time.Minute)
		id, err := fireMinutely(ctx, q)
		is.NoErr(err)
		ids = append(ids, id)
		if minute%10 != 9 {
			continue
		}
		rep, err := w.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(rep.Done, 10) // the ten minutes' jobs, all done
		for _, id := range ids[len(ids)-10:] {
			finished[id] = clock.Now()
		}
		if minute%60 != 59 {
			continue
		}
		_, err = q.Clean(ctx)
		is.NoErr(err)
		checkRetained(t, q, ids, finished, clock.Now().Add(-lite.DefaultRetainDone))
	}
	for _, id := range ids {
		is.Equal(ran[id], 1) // every job ran, once
	}
	var size int64
	is.NoErr(q.DB().QueryRowContext(ctx, "select page_count * page_size from pragma_page_count(), pragma_page_size()").Scan(&size))
	t.Logf("after %d days: %d jobs enqueued, file %d KiB", days, len(ids), size>>10)
	is.True(size < monthFileLimit) // the file holds a day, not a month
}

// checkRetained checks that the jobs in the queue are exactly those that
// finished after cutoff: none deleted early, none kept past its age.
func checkRetained(t *testing.T, q *lite.Queue, ids []int64, finished map[int64]time.Time, cutoff time.Time) {
	t.Helper()
	is := is.New(t)
	var count, lo, hi int64
	is.NoErr(q.DB().QueryRowContext(t.Context(), "select count(*), min(id), max(id) from lite_jobs").Scan(&count, &lo, &hi))
	first := ids[0]
	for _, id := range ids {
		if finished[id].After(cutoff) {
			first = id
			break
		}
	}
	is.Equal(lo, first)           // older jobs gone, and none younger than a day
	is.Equal(hi, ids[len(ids)-1]) // the newest is there
	is.Equal(count, hi-lo+1)      // and everything in between: none lost
}
