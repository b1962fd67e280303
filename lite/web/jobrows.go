package web

import (
	"context"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
)

// previewBytes is how much of each payload the jobs page reads, and
// previewRunes how much of it a row shows.
const (
	previewBytes = 240
	previewRunes = 60
)

// jobRow is one job on the jobs page, with the glimpses a row shows.
type jobRow struct {
	*lite.Job
	Preview   string // the payload's start, escaped and cut
	LastError string // the last error's start, escaped and cut
	Scheduled bool   // available, but its run_at is ahead
	// ParkedLabel shows in place of its state while it is parked and its
	// time has not come: sleeping or awaiting, as lite ls shows it.
	ParkedLabel string
}

// jobRows are the rows of jobs, each payload read only as far as a row
// shows it.
func (s *server) jobRows(ctx context.Context, jobs []*lite.Job) ([]jobRow, error) {
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	previews, err := s.q.Previews(ctx, ids, previewBytes)
	if err != nil {
		return nil, err
	}
	now := s.opts.Now()
	rows := make([]jobRow, len(jobs))
	for i, j := range jobs {
		rows[i] = jobRow{Job: j, Preview: cut(field(string(previews[j.ID]))), Scheduled: scheduled(j, now), ParkedLabel: parkedLabel(j, now)}
		if n := len(j.Errors); n > 0 {
			rows[i].LastError = cut(field(j.Errors[n-1].Error))
		}
	}
	return rows, nil
}

// scheduled says that j waits for a run_at still ahead.
func scheduled(j *lite.Job, now time.Time) bool {
	return j.State == lite.StateAvailable && j.RunAt.After(now)
}

// cut is s at most previewRunes long, with an ellipsis when it was longer.
func cut(s string) string {
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	r := []rune(s)
	return string(r[:previewRunes]) + "…"
}

// prevPage is the before= of the page newer than the one that starts at
// first, 0 for the first page: the limit+1 jobs newer than first, read
// oldest first, end where that page begins.
func (s *server) prevPage(ctx context.Context, f lite.ListFilter, first int64) (int64, error) {
	g := f
	g.Newest, g.BeforeID, g.AfterID, g.Limit = false, 0, first, f.Limit+1
	newer, err := s.q.List(ctx, g)
	if err != nil || len(newer) <= f.Limit {
		return 0, err
	}
	return newer[f.Limit].ID, nil
}

// pageLink is the query of the jobs page of filter f before id before (0:
// the first page). It is made by url.Values, so every value in it is
// encoded already: the template must not encode its = and & again.
func pageLink(f lite.ListFilter, before int64) template.URL {
	v := url.Values{}
	for k, s := range map[string]string{"state": string(f.State), "queue": f.Queue, "kind": f.Kind, "key": f.UniqueKey} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if len(f.Tags) > 0 {
		v.Set("tag", strings.Join(f.Tags, ","))
	}
	if f.Batch != 0 {
		v.Set("batch", strconv.FormatInt(f.Batch, 10))
	}
	if f.Limit != defaultPage {
		v.Set("limit", strconv.Itoa(f.Limit))
	}
	if before != 0 {
		v.Set("before", strconv.FormatInt(before, 10))
	}
	return template.URL(v.Encode())
}

// timings are a job's wait (from its run_at to its last lease) and run
// (from that lease to its end, or to now while it runs), zero when the
// job has none: an available job's last lease, if any, was of a run
// before its run_at moved.
func timings(j *lite.Job, now time.Time) (wait, run time.Duration) {
	if j.LeasedAt.IsZero() || j.State == lite.StateAvailable {
		return 0, 0
	}
	if !j.LeasedAt.Before(j.RunAt) {
		wait = j.LeasedAt.Sub(j.RunAt)
	}
	switch {
	case j.State == lite.StateRunning:
		run = now.Sub(j.LeasedAt)
	case !j.FinishedAt.IsZero() && !j.FinishedAt.Before(j.LeasedAt):
		run = j.FinishedAt.Sub(j.LeasedAt)
	}
	return wait, run
}

// withTotals sets each row's totals from counters, and adds a row for a
// queue that has counters alone, so an emptied queue stays in view.
func withTotals(rows []queueRow, counters []lite.Counters) []queueRow {
	for _, c := range counters {
		i := slices.IndexFunc(rows, func(r queueRow) bool { return r.Queue == c.Queue })
		if i < 0 {
			rows = append(rows, queueRow{Queue: c.Queue, Counts: []stateCount{
				{lite.StateAvailable, 0}, {lite.StateRunning, 0}, {lite.StateDone, 0}, {lite.StateDead, 0}}})
			i = len(rows) - 1
		}
		rows[i].Totals = c
	}
	slices.SortFunc(rows, func(a, b queueRow) int { return strings.Compare(a.Queue, b.Queue) })
	return rows
}
