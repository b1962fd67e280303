package web

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

// bulkRequest is a bulk action as a form or the API gives it: the action,
// and either the jobs selected on a page (id, repeated) or every job a
// filter matches (state, repeated; queue; kind; tag, repeated or a,b;
// older_than), which all=1 asks for when no field narrows it.
type bulkRequest struct {
	Action    lite.BulkAction
	Filter    lite.Filter
	OlderThan string
	All       bool
}

// bulkTitles are the buttons' words for each action.
var bulkTitles = map[lite.BulkAction]string{lite.BulkRetry: "Retry", lite.BulkCancel: "Cancel", lite.BulkDelete: "Delete"}

// parseBulk reads a bulk request of action from r's form.
func parseBulk(r *http.Request, action lite.BulkAction, now time.Time) (bulkRequest, error) {
	b := bulkRequest{Action: action, All: r.FormValue("all") == "1"}
	if _, ok := bulkTitles[action]; !ok {
		return b, fmt.Errorf("no such bulk action %q", action)
	}
	// A field given empty is refused, as the CLI refuses an empty flag:
	// dropping it would act on more jobs than the caller narrowed to.
	for _, field := range []string{"state", "queue", "kind", "tag"} {
		if vs, ok := r.Form[field]; ok && slices.Contains(vs, "") {
			return b, fmt.Errorf("%s is empty: give a value, or leave the field out not to filter on it", field)
		}
	}
	for _, st := range r.Form["state"] {
		if !slices.Contains(lite.States, lite.State(st)) {
			return b, fmt.Errorf("unknown state %q", st)
		}
		b.Filter.States = append(b.Filter.States, lite.State(st))
	}
	b.Filter.Queue, b.Filter.Kind, b.Filter.Tags = r.FormValue("queue"), r.FormValue("kind"), queryTags(r.Form["tag"])
	if o := r.FormValue("older_than"); o != "" {
		d, err := time.ParseDuration(o)
		if err != nil || d <= 0 {
			return b, fmt.Errorf("older_than must be a duration such as 24h, not %q", o)
		}
		b.OlderThan, b.Filter.Before = d.String(), now.Add(-d)
	}
	for _, v := range r.Form["id"] {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return b, fmt.Errorf("id must be a positive number, not %q", v)
		}
		b.Filter.IDs = append(b.Filter.IDs, id)
	}
	narrowed := len(b.Filter.States) > 0 || b.Filter.Queue != "" || b.Filter.Kind != "" || len(b.Filter.Tags) > 0 ||
		b.OlderThan != "" || len(b.Filter.IDs) > 0
	if !narrowed && !b.All {
		return b, errors.New("give the jobs: id, or a filter (state, queue, kind, tag, older_than), or all=1 for every job")
	}
	return b, nil
}

// bulkDone is what the API answers, as `lite --json` prints it.
type bulkDone struct {
	Action lite.BulkAction `json:"action"`
	Count  int64           `json:"count"`
	DryRun bool            `json:"dry_run"`
}

// routeBulk serves POST api/bulk/{action} (dry_run=1 counts only) and the
// dashboard's bulk actions: GET jobs/bulk is the confirmation, which
// counts, and POST jobs/bulk acts.
func (s *server) routeBulk(mux *http.ServeMux) {
	mux.HandleFunc("/api/bulk/{action}", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		b, ok := s.bulkRequest(w, r, lite.BulkAction(r.PathValue("action")))
		if !ok {
			return
		}
		dry := r.FormValue("dry_run") == "1"
		count := s.q.Bulk
		if dry {
			count = s.q.BulkCount
		}
		n, err := count(r.Context(), b.Action, b.Filter)
		s.reply(w, r, bulkDone{Action: b.Action, Count: n, DryRun: dry}, err)
	}))
	mux.HandleFunc("GET /jobs/bulk", func(w http.ResponseWriter, r *http.Request) {
		action, all := strings.CutSuffix(r.FormValue("do"), "-all")
		if !all {
			r.Form.Del("all")
		} else {
			r.Form.Set("all", "1")
			r.Form.Del("id") // all matching, whatever was ticked
		}
		b, ok := s.bulkRequest(w, r, lite.BulkAction(action))
		if !ok {
			return
		}
		n, err := s.q.BulkCount(r.Context(), b.Action, b.Filter)
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		s.render(w, r, http.StatusOK, "bulk", bulkView{bulkRequest: b, Title: bulkTitles[b.Action], Count: n})
	})
	mux.HandleFunc("POST /jobs/bulk", func(w http.ResponseWriter, r *http.Request) {
		b, ok := s.bulkRequest(w, r, lite.BulkAction(r.FormValue("action")))
		if !ok {
			return
		}
		n, err := s.q.Bulk(r.Context(), b.Action, b.Filter)
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		s.render(w, r, http.StatusOK, "bulk", bulkView{bulkRequest: b, Title: bulkTitles[b.Action], Count: n, Done: true})
	})
}

// bulkRequest parses a bulk request of action, after refusing it in
// read-only mode; on an error it writes the answer.
func (s *server) bulkRequest(w http.ResponseWriter, r *http.Request, action lite.BulkAction) (bulkRequest, bool) {
	if s.refuseReadOnly(w, r) {
		return bulkRequest{}, false
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return bulkRequest{}, false
	}
	b, err := parseBulk(r, action, s.opts.Now())
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return bulkRequest{}, false
	}
	return b, true
}

// bulkView is the confirmation of a bulk action, with the count it would
// change, or its outcome (Done) with the count it changed.
type bulkView struct {
	bulkRequest
	Title string
	Count int64
	Done  bool
}
