package web

import (
	"bytes"
	"context"
	"embed"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticDir embed.FS

func staticFiles() http.Handler {
	sub, err := fs.Sub(staticDir, "static")
	if err != nil {
		panic(err) // unreachable: the directory is embedded
	}
	return http.FileServerFS(sub)
}

// pages are the templates, one set per page, each with the layout.
type pages map[string]*template.Template

// mustParsePages parses the embedded templates; now is the clock ages
// are shown by.
func mustParsePages(now func() time.Time) pages {
	funcs := template.FuncMap{
		"field": field,
		"tags":  func(tags []string) string { return field(strings.Join(tags, ",")) },
		"lines": block,
		"when":  func(t time.Time) string { return when(t, now()) },
		"age":   age,
		"short": short,
		"rowOf": func(root string, row queueRow) rowContext { return rowContext{root, row} },
	}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	p := pages{}
	for _, name := range names {
		base := name[len("templates/") : len(name)-len(".html")]
		if base == "layout" {
			continue
		}
		p[base] = template.Must(template.New(base).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", name))
	}
	return p
}

// page is what every template gets: Data is the page's own.
type page struct {
	Root     string // the handler's root, relative to this page
	ReadOnly bool
	Token    bool // a token is set: offer to log out
	Data     any
}

// render writes the named page with data.
func (s *server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	s.renderPart(w, r, code, name, "layout", data)
}

// renderPart writes the template tmpl of the named page: "layout" for the
// whole page. It renders into a buffer first, so that a template error is
// a clean 500 rather than half a page.
func (s *server) renderPart(w http.ResponseWriter, r *http.Request, code int, name, tmpl string, data any) {
	var buf bytes.Buffer
	err := s.pages[name].ExecuteTemplate(&buf, tmpl, page{Root: root(r), ReadOnly: s.opts.ReadOnly, Token: s.opts.Token != "", Data: data})
	if err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// when is t as UTC with how long ago it was; a zero t is a dash, and
// one in year 9999 never (its distance from now overflows a Duration).
func when(t, now time.Time) string {
	if t.IsZero() {
		return "—"
	}
	if t.Year() >= 9999 { // the wake time of a wait for a signal without a timeout
		return "never: until a signal wakes it"
	}
	d := now.Sub(t)
	rel := age(d) + " ago"
	if d < 0 {
		rel = "in " + age(-d)
	}
	return t.UTC().Format("2006-01-02 15:04:05Z") + " (" + rel + ")"
}

// short is d without its trailing zero units: 1m rather than 1m0s, as
// a limit's period is written.
func short(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// age is d rounded for reading: 850ms, 42s, 3m10s, 5h2m, 3d4h.
func age(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	days := d / (24 * time.Hour)
	return strconv.FormatInt(int64(days), 10) + "d" + strconv.FormatInt(int64((d-days*24*time.Hour)/time.Hour), 10) + "h"
}

// routePages serves the dashboard's pages.
func (s *server) routePages(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		s.overview(w, r, "layout")
	})
	mux.HandleFunc("GET /live", func(w http.ResponseWriter, r *http.Request) {
		s.overview(w, r, "queues")
	})
	mux.HandleFunc("GET /jobs", s.jobsPage)
	mux.HandleFunc("GET /jobs/{id}", s.jobPage)
	mux.HandleFunc("GET /jobs/{id}/confirm", s.confirmPage)
	mux.HandleFunc("GET /jobs/{id}/live", s.jobLive)
	for _, a := range jobActions {
		mux.HandleFunc("/jobs/{id}/"+a.Name, s.postOnly(func(w http.ResponseWriter, r *http.Request) {
			id, err := s.actionID(w, r)
			if err != nil {
				return
			}
			if err := a.do(r.Context(), s.q, id); err != nil {
				s.fail(w, r, status(err), err.Error())
				return
			}
			seeOther(w, root(r)+"jobs/"+strconv.FormatInt(id, 10))
		}))
	}
	mux.HandleFunc("GET /purge", s.purgePage)
	mux.HandleFunc("POST /purge", func(w http.ResponseWriter, r *http.Request) {
		if s.refuseReadOnly(w, r) {
			return
		}
		p, err := parsePurge(r, s.opts.Now())
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		n, err := s.q.Purge(r.Context(), p.before, p.states...)
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		s.render(w, r, http.StatusOK, "purge", purgeView{Deleted: &n})
	})
	mux.HandleFunc("GET /workers", func(w http.ResponseWriter, r *http.Request) {
		ws, err := s.workers(r)
		var rows []workerRow
		if err == nil {
			rows, err = s.workerRows(r.Context(), ws.Workers)
		}
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		s.render(w, r, http.StatusOK, "workers", workersView{Workers: rows, Unhandled: ws.Unhandled})
	})
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusOK, "login", nil)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such page")
	})
}

// queueRow is one queue on the overview: its backlog by state, its jobs
// done and dead in the chart's window, its pause and limits, and the
// actions it offers (none when read-only; Admin says the same for the
// limits form).
type queueRow struct {
	Queue       string
	Counts      []stateCount
	OldestReady time.Duration
	Chart       chart
	Paused      bool
	Limits      lite.Limits
	// LimitsOwner is who set Limits: "" by hand, or a Declaration's Owner.
	LimitsOwner string
	Actions     []namedAction
	Admin       bool
	// Totals are the queue's outcomes ever, from the counters that
	// retention never lowers.
	Totals lite.Counters
}

// HasLimits says whether the queue has a limit, and so an owner of its
// limits to show.
func (r queueRow) HasLimits() bool { return r.Limits != (lite.Limits{}) }

// stateCount is a number of a queue's jobs in a state, linked to them.
type stateCount struct {
	State lite.State
	N     int64
}

// rowContext is what the queue row's template gets: it is rendered
// inside a range, out of reach of the page's Root.
type rowContext struct {
	Root string
	Row  queueRow
}

// overview renders the overview page, or with "queues" the part of it
// that the page's script fetches again every few seconds. It counts no
// finished job but those of the chart's window: Backlog and Throughput
// read the partial indexes, so the page costs the same on a file that
// keeps a million finished jobs as on a new one.
func (s *server) overview(w http.ResponseWriter, r *http.Request, tmpl string) {
	backlog, err := s.q.Backlog(r.Context())
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	t, err := s.q.Throughput(r.Context(), chartWindow)
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	counters, err := s.q.Counters(r.Context())
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	rows := withTotals(queueRows(backlog, charts(t, s.opts.Now())), counters)
	for i := range rows {
		rows[i].Actions = s.actionsFor(queues, rows[i].Paused)
		rows[i].Admin = !s.opts.ReadOnly
	}
	s.renderPart(w, r, http.StatusOK, "overview", tmpl, rows)
}

// queueRows is a row for each queue with a backlog, settings or finished
// jobs in the chart, in queue order.
func queueRows(backlog []lite.QueueStats, charts map[string]chart) []queueRow {
	byQueue := map[string]lite.QueueStats{}
	for _, b := range backlog {
		byQueue[b.Queue] = b
	}
	for q := range charts {
		if _, ok := byQueue[q]; !ok {
			byQueue[q] = lite.QueueStats{Queue: q}
		}
	}
	rows := make([]queueRow, 0, len(byQueue))
	for _, q := range slices.Sorted(maps.Keys(byQueue)) {
		b, c := byQueue[q], charts[q]
		rows = append(rows, queueRow{Queue: q, OldestReady: b.OldestReady, Chart: c, Paused: b.Paused, Limits: b.Limits, LimitsOwner: b.LimitsOwner, Counts: []stateCount{
			{lite.StateAvailable, b.Counts[lite.StateAvailable]},
			{lite.StateRunning, b.Counts[lite.StateRunning]},
			{lite.StateDone, c.Done},
			{lite.StateDead, c.Dead},
		}})
	}
	return rows
}

// jobsView is the jobs page: the filter, a page of jobs and the next
// page's before=.
type jobsView struct {
	Filter lite.ListFilter
	States []lite.State
	Jobs   []jobRow
	Next   int64
	// Prev is the before= of the page before this one (0: the first);
	// HasPrev says there is one.
	Prev    int64
	HasPrev bool
}

// Link is the query of the page before id before (0: the first).
func (v jobsView) Link(before int64) template.URL { return pageLink(v.Filter, before) }

func (s *server) jobsPage(w http.ResponseWriter, r *http.Request) {
	if id := r.URL.Query().Get("id"); id != "" {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
			seeOther(w, root(r)+"jobs/"+strconv.FormatInt(n, 10))
			return
		}
		s.fail(w, r, http.StatusBadRequest, "a job id is a positive number")
		return
	}
	f, err := parseFilter(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	v, err := s.jobsView(r.Context(), f)
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "jobs", v)
}

// jobsView reads the page of jobs f asks for, with its neighbours' links.
func (s *server) jobsView(ctx context.Context, f lite.ListFilter) (jobsView, error) {
	jobs, err := s.q.List(ctx, f)
	if err != nil {
		return jobsView{}, err
	}
	v := jobsView{Filter: f, States: lite.States, Next: next(jobs, f), HasPrev: f.BeforeID != 0}
	if v.Jobs, err = s.jobRows(ctx, jobs); err == nil && v.HasPrev && len(jobs) > 0 {
		v.Prev, err = s.prevPage(ctx, f, jobs[0].ID)
	}
	return v, err
}

// jobView is a job's page.
type jobView struct {
	Job                     *lite.Job
	Payload, Result         string
	PayloadJSON, ResultJSON bool
	HeartbeatAge            time.Duration
	Actions                 []jobAction
	Wait, Run               time.Duration
	Scheduled               bool
	Links                   lite.Links
	Batch                   lite.Batch // zero ID: none
	progressView
	// Parked says what a parked job waits for, and ParkedLabel shows in
	// place of its state while it waits (sleeping, awaiting).
	Parked      parkedView
	ParkedLabel string
	Steps       []stepEntry
	// Signal is the form that sends the job a signal, offered while it
	// has not finished (CanSignal) unless the handler is read-only.
	Signal    signalView
	CanSignal bool
}

func (s *server) jobPage(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	var f signalView
	if o := r.URL.Query().Get("signal"); o == "sent" || o == "again" {
		f.Outcome = o // where a posted signal's redirect leads
	}
	s.renderJob(w, r, http.StatusOK, id, f)
}

// renderJob writes job id's page with code, its signal form holding f.
func (s *server) renderJob(w http.ResponseWriter, r *http.Request, code int, id int64, f signalView) {
	j, err := s.q.Get(r.Context(), id)
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	now := s.opts.Now()
	v := jobView{Job: j, Scheduled: scheduled(j, now), progressView: progressOf(j),
		Parked: parkedOf(j, now), ParkedLabel: parkedLabel(j, now), Steps: timeline(j.Steps, now)}
	if !s.workflow(w, r, &v) {
		return
	}
	v.Wait, v.Run = timings(j, now)
	v.Payload, v.PayloadJSON = content(j.Payload)
	v.Result, v.ResultJSON = content(j.Result)
	if !j.HeartbeatAt.IsZero() {
		v.HeartbeatAge = now.Sub(j.HeartbeatAt)
	}
	for _, a := range jobActions {
		if !s.opts.ReadOnly && a.Applies(j) {
			v.Actions = append(v.Actions, a)
		}
	}
	v.CanSignal = !s.opts.ReadOnly && !j.State.Finished()
	if f.Name == "" && f.Error == "" && j.Parked == lite.ParkedSignal {
		f.Name = j.ParkedOn // what it awaits, unless it would not show as it is
	}
	f.Error = field(f.Error)
	v.Signal = shownBack(f)
	s.render(w, r, code, "job", v)
}

// workflow reads what the job waits for, what waits for it and its batch
// into v; on an error it writes the answer.
func (s *server) workflow(w http.ResponseWriter, r *http.Request, v *jobView) bool {
	var err error
	if v.Links, err = s.q.Links(r.Context(), v.Job.ID); err == nil && v.Links.Batch != 0 {
		v.Batch, err = s.q.GetBatch(r.Context(), v.Links.Batch)
	}
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return false
	}
	return true
}

// job reads the job the path names; on an error it writes the answer.
func (s *server) job(w http.ResponseWriter, r *http.Request) (*lite.Job, bool) {
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return nil, false
	}
	j, err := s.q.Get(r.Context(), id)
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return nil, false
	}
	return j, true
}

// confirmView asks before an action on a job.
type confirmView struct {
	Job    *lite.Job
	Action jobAction
}

func (s *server) confirmPage(w http.ResponseWriter, r *http.Request) {
	if s.refuseReadOnly(w, r) {
		return
	}
	a, ok := findJobAction(r.URL.Query().Get("action"))
	if !ok {
		s.fail(w, r, http.StatusBadRequest, "no such action")
		return
	}
	j, ok := s.job(w, r)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "confirm", confirmView{Job: j, Action: a})
}

// purgeView is the purge page: the form, its confirmation (Confirm with
// the parsed request), or the outcome (Deleted).
type purgeView struct {
	Confirm   bool
	State     string
	OlderThan string
	Before    time.Time
	Deleted   *int64
}

func (s *server) purgePage(w http.ResponseWriter, r *http.Request) {
	if s.refuseReadOnly(w, r) {
		return
	}
	if r.FormValue("older_than") == "" {
		s.render(w, r, http.StatusOK, "purge", purgeView{})
		return
	}
	p, err := parsePurge(r, s.opts.Now())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return
	}
	s.render(w, r, http.StatusOK, "purge", purgeView{Confirm: true, State: r.FormValue("state"),
		OlderThan: p.olderThan.String(), Before: p.before})
}
