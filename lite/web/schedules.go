package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/liteq/lite/lite"
)

// routeSchedules serves the schedules and the retention policy: the page
// schedules shows both; the API has GET api/schedules, GET api/retention
// and POST api/retention, which sets the states it is given.
func (s *server) routeSchedules(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/schedules", func(w http.ResponseWriter, r *http.Request) {
		list, err := s.q.Schedules(r.Context())
		s.reply(w, r, nonNil(list), err)
	})
	mux.HandleFunc("GET /api/retention", func(w http.ResponseWriter, r *http.Request) {
		ret, err := s.q.Retention(r.Context())
		s.reply(w, r, retentionJSON{millis(ret.Done), millis(ret.Cancelled), millis(ret.Dead)}, err)
	})
	mux.HandleFunc("/api/retention", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		if s.refuseReadOnly(w, r) {
			return
		}
		ret, err := s.q.Retention(r.Context())
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		// Every field is read before anything is stored: a bad one
		// changes nothing.
		for _, f := range []struct {
			name string
			keep *time.Duration
		}{{"done_ms", &ret.Done}, {"cancelled_ms", &ret.Cancelled}, {"dead_ms", &ret.Dead}} {
			if err := formKeep(r, f.name, f.keep); err != nil {
				s.fail(w, r, http.StatusBadRequest, err.Error())
				return
			}
		}
		if err := s.q.SetRetention(r.Context(), ret); err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		ret, err = s.q.Retention(r.Context())
		s.reply(w, r, retentionJSON{millis(ret.Done), millis(ret.Cancelled), millis(ret.Dead)}, err)
	}))
	mux.HandleFunc("GET /schedules", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.schedulesView(r)
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		s.render(w, r, http.StatusOK, "schedules", v)
	})
}

// retentionJSON is the policy as `lite retention --json` prints it: how
// long each finished state is kept in milliseconds, null for forever.
type retentionJSON struct {
	Done      *int64 `json:"done_ms"`
	Cancelled *int64 `json:"cancelled_ms"`
	Dead      *int64 `json:"dead_ms"`
}

// formKeep sets *keep from the form field name, in the units GET
// api/retention answers in: milliseconds, "forever", or "default" (the
// library's); a missing field leaves *keep as it is. Whether the time is
// one to keep jobs for is SetRetention's to judge.
func formKeep(r *http.Request, name string, keep *time.Duration) error {
	switch v := r.PostFormValue(name); v {
	case "":
	case "forever":
		*keep = lite.KeepForever
	case "default":
		*keep = 0
	default:
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms > int64(lite.KeepForever/time.Millisecond)-1 {
			return fmt.Errorf("%s must be milliseconds, forever or default, not %q", name, v)
		}
		*keep = time.Duration(ms) * time.Millisecond
	}
	return nil
}

func millis(d time.Duration) *int64 {
	if d == lite.KeepForever {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// scheduleRow is a schedule on its page, with the actions it offers.
type scheduleRow struct {
	lite.Schedule
	Actions []namedAction
}

// schedulesView is the schedules page.
type schedulesView struct {
	Schedules []scheduleRow
	Retention []kept
}

// kept is how long one finished state's jobs are kept.
type kept struct {
	State lite.State
	For   time.Duration
}

// Text is how long, as `lite retention` writes it.
func (k kept) Text() string { return lite.FormatRetention(k.For) }

func (s *server) schedulesView(r *http.Request) (schedulesView, error) {
	list, err := s.q.Schedules(r.Context())
	if err != nil {
		return schedulesView{}, err
	}
	ret, err := s.q.Retention(r.Context())
	if err != nil {
		return schedulesView{}, err
	}
	v := schedulesView{Retention: []kept{{lite.StateDone, ret.Done}, {lite.StateCancelled, ret.Cancelled}, {lite.StateDead, ret.Dead}}}
	for _, sc := range list {
		v.Schedules = append(v.Schedules, scheduleRow{sc, s.actionsFor(schedules, sc.Paused)})
	}
	return v, nil
}
