package lite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unicode/utf8"
)

// The bounds of what a job keeps of its progress and log. A chatty handler
// or command cannot grow the file: each write keeps the latest
// MaxLogBytes of lines, cut at a line, and a line longer than MaxLogLine
// is cut short.
const (
	MaxProgressBytes = 4 << 10  // a progress value's JSON, and its note
	MaxLogBytes      = 64 << 10 // the log a job keeps, newlines included
	MaxLogLines      = 100      // the lines Get shows of it
	MaxLogLine       = 1 << 10  // one line's bytes
)

// ErrNotRunning refuses SetProgress and Log outside a handler's context.
var ErrNotRunning = errors.New("not inside a running job's handler")

// Update is a running job's progress and new log lines, written under
// its lease: a nil Progress leaves the job's progress as it was.
type Update struct {
	Progress json.RawMessage
	Note     string
	Lines    []string
}

// Fraction is the progress value for a fraction done, 0 to 1.
func Fraction(f float64) (json.RawMessage, error) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		return nil, fmt.Errorf("progress %v: a fraction is from 0 to 1", f)
	}
	return json.Marshal(f)
}

// check refuses a progress value that is not JSON or is too large, and
// cuts lines at a newline and at MaxLogLine.
func (u Update) check() (Update, error) {
	if u.Progress != nil {
		if !json.Valid(u.Progress) {
			return u, errors.New("progress: not a JSON value")
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, u.Progress) // valid, so it compacts
		u.Progress = compact.Bytes()
		if len(u.Progress) > MaxProgressBytes || len(u.Note) > MaxProgressBytes {
			return u, fmt.Errorf("progress: %w: its value and its note may have %d bytes each", ErrTooLarge, MaxProgressBytes)
		}
		u.Note = strings.ToValidUTF8(u.Note, "\uFFFD")
	}
	var lines []string
	for _, l := range u.Lines {
		for part := range strings.SplitSeq(strings.TrimSuffix(l, "\n"), "\n") {
			lines = append(lines, cutLine(strings.ToValidUTF8(part, "\uFFFD")))
		}
	}
	u.Lines = lines
	return u, nil
}

// cutLine shortens a line to MaxLogLine bytes, at a rune.
func cutLine(l string) string {
	if len(l) <= MaxLogLine {
		return l
	}
	cut := MaxLogLine - len("…")
	for cut > 0 && !utf8.RuneStart(l[cut]) {
		cut--
	}
	return l[:cut] + "…"
}

// text is the lines as the log column appends them, each ending in a
// newline, or nil for none; of a batch longer than the log keeps, only
// the latest lines go.
func (u Update) text() any {
	if len(u.Lines) == 0 {
		return nil
	}
	var b strings.Builder
	n := 0
	start := len(u.Lines)
	for start > 0 && n+len(u.Lines[start-1])+1 <= MaxLogBytes {
		start--
		n += len(u.Lines[start]) + 1
	}
	for _, l := range u.Lines[start:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// merge adds a later update to u: the later progress wins, lines append.
func (u *Update) merge(later Update) {
	if later.Progress != nil {
		u.Progress, u.Note = later.Progress, later.Note
	}
	u.Lines = append(u.Lines, later.Lines...)
	if len(u.Lines) > 2*MaxLogLines { // only the latest are kept anyway
		u.Lines = append(u.Lines[:0:0], u.Lines[len(u.Lines)-MaxLogLines:]...)
	}
}

func (u Update) empty() bool { return u.Progress == nil && len(u.Lines) == 0 }

// reportSQL writes each listed lease's update if the lease is still the
// job's current one, in one statement, and returns the leases written.
// The log appends the new lines and keeps the latest MaxLogBytes bytes,
// from the first line that starts within them.
var reportSQL = stmt{
	sqlite: `update lite_jobs set
  progress = case when u.progress is null then lite_jobs.progress else u.progress end,
  progress_note = case when u.progress is null then lite_jobs.progress_note else u.note end,
  log_tail = case when u.lines is null then lite_jobs.log_tail else (
    select case when length(cast(n as blob)) <= 65536 then n
      else cast(substr(t, instr(t, x'0a') + 1) as text) end
    from (select n, substr(cast(n as blob), -65536) as t
          from (select coalesce(lite_jobs.log_tail, '') || u.lines as n))) end
from (select value ->> 0 as id, value ->> 1 as generation, value ->> 2 as progress,
             value ->> 3 as note, value ->> 4 as lines from json_each(?)) as u
where lite_jobs.state = 'running'
  and lite_jobs.id = u.id and lite_jobs.generation = u.generation
returning lite_jobs.id, lite_jobs.generation`,
	postgres: `update lite_jobs j set
  progress = case when u.progress is null then j.progress else u.progress end,
  progress_note = case when u.progress is null then j.progress_note else u.note end,
  log_tail = case when u.lines is null then j.log_tail else (
    select case when octet_length(n) <= 65536 then n
      else convert_from(substring(t from position('\x0a'::bytea in t) + 1), 'UTF8') end
    from (select n, substring(convert_to(n, 'UTF8') from octet_length(n) - 65535) as t
          from (select coalesce(j.log_tail, '') || u.lines as n) a) b) end
from (select (value ->> 0)::bigint as id, (value ->> 1)::bigint as generation, value ->> 2 as progress,
             value ->> 3 as note, value ->> 4 as lines from jsonb_array_elements($1::jsonb)) as u
where j.state = 'running'
  and j.id = u.id and j.generation = u.generation
returning j.id, j.generation`,
}

// Report writes a running job's progress and log lines under its lease,
// in one short statement: the way a process that does not hold the lease
// itself (a `lite work` command, through `lite progress` and `lite log`)
// reports. A lease that is no longer the job's current one is refused
// with ErrLeaseLost, as its ack would be. A handler calls SetProgress and
// Log instead, which ride its worker's next heartbeat.
func (q *Queue) Report(ctx context.Context, l Lease, u Update) error {
	u, err := u.check()
	if err != nil {
		return fmt.Errorf("report job %d: %w", l.JobID, err)
	}
	written, err := q.report(ctx, []Lease{l}, []Update{u})
	if err != nil {
		return fmt.Errorf("report job %d: %w", l.JobID, err)
	}
	if !written[[2]int64{l.JobID, l.Generation}] {
		return q.lossOf(ctx, l)
	}
	return q.afterWrite(ctx, fmt.Sprintf("report job %d", l.JobID))
}

// report writes checked updates, one per lease, in one statement.
func (q *Queue) report(ctx context.Context, leases []Lease, updates []Update) (map[[2]int64]bool, error) {
	rows := make([][5]any, len(leases))
	for i, l := range leases {
		u := updates[i]
		rows[i] = [5]any{l.JobID, l.Generation, nil, u.Note, u.text()}
		if u.Progress != nil {
			rows[i][2] = string(u.Progress)
		}
	}
	list, err := json.Marshal(rows)
	if err != nil {
		return nil, err
	}
	written, err := q.matched(ctx, q.sql(reportSQL), func() []any { return []any{string(list)} })
	if len(written) > 0 {
		q.finishedSome() // WaitProgress's waiters look, here and on a server's other processes
	}
	return written, err
}

// reports holds what a run's handler reported and its worker has not
// written yet.
type reports struct {
	writing sync.Mutex // held from taking the pending update to its write
	mu      sync.Mutex
	pending Update
	lost    error // the lease was found lost: later reports are refused
}

type reportsKey struct{}

// SetProgress records the running job's progress: a fraction 0..1 (a
// float64) or any small JSON value (at most MaxProgressBytes marshalled),
// and a short note. It costs no write of its own: the worker's next
// heartbeat, or the run's ack, writes it under the run's lease. Once the
// lease is known lost, it returns ErrLeaseLost.
func SetProgress(ctx context.Context, value any, note string) error {
	var (
		raw json.RawMessage
		err error
	)
	if f, ok := value.(float64); ok {
		raw, err = Fraction(f)
	} else {
		raw, err = json.Marshal(value)
	}
	if err != nil {
		return fmt.Errorf("set progress: %w", err)
	}
	return record(ctx, Update{Progress: raw, Note: note})
}

// Log appends lines to the running job's log, which keeps the latest
// MaxLogBytes (Get shows the last MaxLogLines); text with newlines is
// several lines. Like SetProgress it rides the next heartbeat, and
// returns ErrLeaseLost once the lease is known lost.
func Log(ctx context.Context, lines ...string) error {
	return record(ctx, Update{Lines: lines})
}

func record(ctx context.Context, u Update) error {
	rs, ok := ctx.Value(reportsKey{}).(*reports)
	if !ok {
		return ErrNotRunning
	}
	u, err := u.check()
	if err != nil {
		return err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.lost != nil {
		return rs.lost
	}
	rs.pending.merge(u)
	return nil
}

// take returns the pending update and clears it.
func (rs *reports) take() Update {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	u := rs.pending
	rs.pending = Update{}
	return u
}

// putBack restores an update whose write failed, ahead of later ones.
func (rs *reports) putBack(u Update) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	u.merge(rs.pending)
	rs.pending = u
}

func (rs *reports) refuse(lost error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.lost, rs.pending = lost, Update{}
}

// writeReports writes the runs' pending reports in one statement; a run
// whose lease is gone has its reports refused from then on. A heartbeat
// skips a run whose reports are being written already (by its ack), so
// that the ack's write never overtakes the lines the heartbeat holds.
func (w *Worker) writeReports(ctx context.Context, runs []*run, heartbeat bool) error {
	var (
		leases  []Lease
		updates []Update
		from    []*run
	)
	for _, r := range runs {
		if heartbeat && !r.reports.writing.TryLock() {
			continue
		} else if !heartbeat {
			r.reports.writing.Lock()
		}
		defer r.reports.writing.Unlock()
		if u := r.reports.take(); !u.empty() {
			leases, updates, from = append(leases, r.job.Lease()), append(updates, u), append(from, r)
		}
	}
	if len(leases) == 0 {
		return nil
	}
	written, err := w.q.report(ctx, leases, updates)
	if err != nil {
		for i, r := range from {
			r.reports.putBack(updates[i])
		}
		return fmt.Errorf("write progress: %w", err)
	}
	for i, r := range from {
		if !written[[2]int64{leases[i].JobID, leases[i].Generation}] {
			r.reports.refuse(leaseLost(leases[i]))
		}
	}
	return nil
}

// Percent is the job's progress as a percentage, rounded to a tenth, when
// it is a fraction from 0 to 1: what `lite ls` and the dashboard show.
func (j *Job) Percent() (float64, bool) {
	var f float64
	if j.Progress == nil || json.Unmarshal(j.Progress, &f) != nil || f < 0 || f > 1 {
		return 0, false
	}
	return math.Round(f*1000) / 10, true
}

// setProgress fills the job's progress fields from their columns.
func (j *Job) setProgress(progress, note, logTail sql.NullString) {
	if progress.Valid {
		j.Progress = json.RawMessage(progress.String)
	}
	j.ProgressNote = note.String
	if logTail.String == "" {
		return
	}
	lines := strings.Split(strings.TrimSuffix(logTail.String, "\n"), "\n")
	j.Log = lines[max(0, len(lines)-MaxLogLines):]
}

// reportsLogged writes, after a heartbeat's renewal, the reports of the
// runs it renewed.
func (w *Worker) reportsLogged(ctx context.Context, runs []*run, renewed []error) {
	var held []*run
	for i, r := range runs {
		if renewed[i] == nil {
			held = append(held, r)
		} else {
			r.reports.refuse(renewed[i])
		}
	}
	if err := w.writeReports(ctx, held, true); err != nil && ctx.Err() == nil {
		w.opts.Logger.Warn("lite: writing progress failed; retrying next heartbeat", "err", err)
	}
}

// writeLastReports writes what the handler reported since the last
// heartbeat, before its ack: the last lines a run logs are often the ones
// that say why it ended.
func (w *Worker) writeLastReports(r *run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.ctx), ackTimeout)
	defer cancel()
	err := retryBusy(ctx, func() error { return w.writeReports(ctx, []*run{r}, false) })
	if err != nil {
		w.opts.Logger.Warn("lite: writing progress failed", "job_id", r.job.ID, "err", err)
	}
}
