package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

// chartWindow is how far back the throughput chart looks.
const chartWindow = time.Hour

// maxPage caps a page of jobs, so one request cannot read the whole file;
// defaultPage is a page's length when the request gives none.
const maxPage, defaultPage = 1000, 100

// routeAPI serves the JSON API. Reads answer in the shapes `lite --json`
// prints (Job, QueueStats, WorkerInfo); every error is {"error": "..."}
// with a status that says what went wrong.
func (s *server) routeAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/stats", func(w http.ResponseWriter, r *http.Request) {
		stats, err := s.q.Stats(r.Context())
		s.reply(w, r, nonNil(stats), err)
	})
	mux.HandleFunc("GET /api/backlog", func(w http.ResponseWriter, r *http.Request) {
		b, err := s.q.Backlog(r.Context())
		s.reply(w, r, nonNil(b), err)
	})
	mux.HandleFunc("GET /api/throughput", func(w http.ResponseWriter, r *http.Request) {
		t, err := s.q.Throughput(r.Context(), chartWindow)
		s.reply(w, r, nonNil(t), err)
	})
	mux.HandleFunc("GET /api/jobs", func(w http.ResponseWriter, r *http.Request) {
		f, err := parseFilter(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		jobs, err := s.q.List(r.Context(), f)
		s.reply(w, r, jobPage{Jobs: nonNil(jobs), Next: next(jobs, f)}, err)
	})
	mux.HandleFunc("GET /api/jobs/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		j, err := s.q.Get(r.Context(), id)
		s.reply(w, r, j, err)
	})
	mux.HandleFunc("GET /api/jobs/{id}/links", func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r)
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		l, err := s.q.Links(r.Context(), id)
		s.reply(w, r, l, err)
	})
	mux.HandleFunc("GET /api/batches/{id}", func(w http.ResponseWriter, r *http.Request) {
		id, err := pathNumber(r, "batch")
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		b, err := s.q.GetBatch(r.Context(), id)
		s.reply(w, r, b, err)
	})
	mux.HandleFunc("GET /api/workers", func(w http.ResponseWriter, r *http.Request) {
		ws, err := s.workers(r)
		s.reply(w, r, ws, err)
	})
	for _, a := range jobActions {
		mux.HandleFunc("/api/jobs/{id}/"+a.Name, s.postOnly(func(w http.ResponseWriter, r *http.Request) {
			id, err := s.actionID(w, r)
			if err != nil {
				return
			}
			err = a.do(r.Context(), s.q, id)
			s.reply(w, r, actionDone{ID: id, Action: a.Name}, err)
		}))
	}
	mux.HandleFunc("/api/purge", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		if s.refuseReadOnly(w, r) {
			return
		}
		p, err := parsePurge(r, s.opts.Now())
		if err != nil {
			s.fail(w, r, http.StatusBadRequest, err.Error())
			return
		}
		n, err := s.q.Purge(r.Context(), p.before, p.states...)
		s.reply(w, r, purged{Deleted: n}, err)
	}))
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such API call")
	})
}

// jobPage is a page of jobs, newest first: Next is the before= of the
// page that follows, or 0 on the last page.
type jobPage struct {
	Jobs []*lite.Job `json:"jobs"`
	Next int64       `json:"next"`
}

type actionDone struct {
	ID     int64  `json:"id"`
	Action string `json:"action"`
}

type purged struct {
	Deleted int64 `json:"deleted"`
}

// workersPage is every running worker and the ready jobs none of them takes.
type workersPage struct {
	Workers   []lite.WorkerInfo `json:"workers"`
	Unhandled []lite.Unhandled  `json:"unhandled"`
}

func (s *server) workers(r *http.Request) (workersPage, error) {
	ws, err := s.q.Workers(r.Context())
	if err != nil {
		return workersPage{}, err
	}
	u, err := s.q.Unhandled(r.Context())
	return workersPage{Workers: nonNil(ws), Unhandled: nonNil(u)}, err
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// next is the before= for the page following jobs, 0 when this one is the
// last: a short page is the last.
func next(jobs []*lite.Job, f lite.ListFilter) int64 {
	if len(jobs) == 0 || len(jobs) < f.Limit {
		return 0
	}
	return jobs[len(jobs)-1].ID
}

// parseFilter reads a page of jobs' filter from the query: state, queue,
// kind, key (a unique key), tag (repeated, or a,b: jobs carrying every
// one), batch (a batch's id), before (the last id of the page before)
// and limit. Pages run newest first, as a dashboard shows them; it also lets
// a page of available jobs, the newest of a file, be found at once.
func parseFilter(r *http.Request) (lite.ListFilter, error) {
	v := r.URL.Query()
	f := lite.ListFilter{
		State:     lite.State(v.Get("state")),
		Queue:     v.Get("queue"),
		Kind:      v.Get("kind"),
		UniqueKey: v.Get("key"),
		Tags:      queryTags(v["tag"]),
		Newest:    true,
		// A page shows no payload or result: a job's own page does. A
		// page of large jobs would cost their bodies in memory.
		OmitBodies: true,
		Limit:      defaultPage,
	}
	if f.State != "" && !slices.Contains(lite.States, f.State) {
		return f, fmt.Errorf("unknown state %q", f.State)
	}
	for _, t := range f.Tags {
		if err := lite.CheckTag(t); err != nil {
			return f, err
		}
	}
	if b := v.Get("batch"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 1 {
			return f, fmt.Errorf("batch must be a batch id, not %q", b)
		}
		f.Batch = n
	}
	if b := v.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return f, fmt.Errorf("before must be a job id, not %q", b)
		}
		f.BeforeID = n
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxPage {
			return f, fmt.Errorf("limit must be 1 to %d, not %q", maxPage, l)
		}
		f.Limit = n
	}
	return f, nil
}

// queryTags is the tags of the query's tag values, each a tag or a
// comma-separated list; an empty value (a form's blank field) is none.
func queryTags(values []string) []string {
	var tags []string
	for _, v := range values {
		for t := range strings.SplitSeq(v, ",") {
			if t != "" {
				tags = append(tags, t)
			}
		}
	}
	return tags
}

// purge is a purge request: jobs in states that finished before before.
type purge struct {
	states    []lite.State
	olderThan time.Duration
	before    time.Time
}

// parsePurge reads a purge from the form: state (done, dead or cancelled;
// empty for all three) and older_than (a duration such as 24h).
func parsePurge(r *http.Request, now time.Time) (purge, error) {
	var p purge
	if st := lite.State(r.FormValue("state")); st != "" {
		if st != lite.StateDone && st != lite.StateDead && st != lite.StateCancelled {
			return p, fmt.Errorf("state must be done, dead or cancelled, not %q", st)
		}
		p.states = []lite.State{st}
	}
	d, err := time.ParseDuration(r.FormValue("older_than"))
	if err != nil || d < 0 {
		return p, fmt.Errorf("older_than must be a duration such as 24h, not %q", r.FormValue("older_than"))
	}
	p.olderThan, p.before = d, now.Add(-d)
	return p, nil
}

// pathID is the id of the job the path names.
func pathID(r *http.Request) (int64, error) { return pathNumber(r, "job") }

// pathNumber is the id the path names of a job or a batch (what).
func pathNumber(r *http.Request, what string) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		return 0, fmt.Errorf("%s id must be a positive number, not %q", what, r.PathValue("id"))
	}
	return id, nil
}

// actionID is the id of the job an action is posted for, after refusing
// it in read-only mode or for a malformed id; on an error the answer is
// written.
func (s *server) actionID(w http.ResponseWriter, r *http.Request) (int64, error) {
	if s.refuseReadOnly(w, r) {
		return 0, errReadOnly
	}
	id, err := pathID(r)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
	}
	return id, err
}

var errReadOnly = errors.New("read-only: actions are turned off")

// postOnly refuses any method but POST with 405: an action never runs
// for a link followed, a page prefetched or an image loaded.
func (s *server) postOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			s.fail(w, r, http.StatusMethodNotAllowed, "actions are POST only")
			return
		}
		h(w, r)
	}
}

// refuseReadOnly answers 403 when the handler is read-only.
func (s *server) refuseReadOnly(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.ReadOnly {
		s.fail(w, r, http.StatusForbidden, errReadOnly.Error())
	}
	return s.opts.ReadOnly
}

// reply writes v as JSON, or err as an error with its status.
func (s *server) reply(w http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		s.fail(w, r, status(err), err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

// status is the HTTP status of a library error.
func status(err error) int {
	switch {
	case errors.Is(err, lite.ErrNotFound), errors.Is(err, lite.ErrNoSchedule):
		return http.StatusNotFound
	case errors.Is(err, lite.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, lite.ErrInvalidState), errors.Is(err, lite.ErrDuplicate):
		return http.StatusConflict
	case errors.Is(err, lite.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, lite.ErrSignalsFull):
		// Not a conflict with what the job is, as a finished job's 409:
		// the job has to consume its signals first, and then takes more.
		return http.StatusTooManyRequests
	case errors.Is(err, lite.ErrBusy):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// fail answers with an error: {"error": msg} for the API and the metrics,
// an error page for the browser.
func (s *server) fail(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if machine(r) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
		return
	}
	s.render(w, r, code, "error", msg)
}
