package web

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/liteq/lite/lite"
)

// routeLimits serves a queue's limits: POST api/queues/limits and the
// page queues/limits, whose form is its own confirmation (it shows what
// is set, and posting it is the decision).
func (s *server) routeLimits(mux *http.ServeMux) {
	mux.HandleFunc("/api/queues/limits", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		queue, l, ok := s.limitsForm(w, r)
		if !ok {
			return
		}
		err := s.q.SetLimits(r.Context(), queue, l)
		s.reply(w, r, limitsSet{Queue: queue, MaxRunning: l.MaxRunning, Rate: l.Rate, PerMS: l.Per.Milliseconds()}, err)
	}))
	mux.HandleFunc("GET /queues/limits", func(w http.ResponseWriter, r *http.Request) {
		if s.refuseReadOnly(w, r) {
			return
		}
		queue := r.FormValue("queue")
		if !takenName(queue) {
			s.fail(w, r, http.StatusBadRequest, "no queue can be named so: a name is UTF-8 text without control characters")
			return
		}
		backlog, err := s.q.Backlog(r.Context())
		if err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		v := limitsView{Queue: queue}
		for _, b := range backlog {
			if b.Queue == queue {
				v.Limits = b.Limits
			}
		}
		s.render(w, r, http.StatusOK, "limits", v)
	})
	mux.HandleFunc("/queues/limits", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		queue, l, ok := s.limitsForm(w, r)
		if !ok {
			return
		}
		if err := s.q.SetLimits(r.Context(), queue, l); err != nil {
			s.fail(w, r, status(err), err.Error())
			return
		}
		seeOther(w, root(r))
	}))
}

// limitsSet answers POST api/queues/limits with the limits now set, in
// the fields `lite stats --json` uses.
type limitsSet struct {
	Queue      string `json:"queue"`
	MaxRunning int    `json:"max_running"`
	Rate       int    `json:"rate"`
	PerMS      int64  `json:"rate_per_ms"`
}

// limitsView is the limits page: a queue and the limits it has.
type limitsView struct {
	Queue  string
	Limits lite.Limits
}

// limitsForm reads a queue's new limits from the form: queue,
// max_running, rate and per (a duration such as 1s), an empty or missing
// number being no limit. Only their syntax is checked here; SetLimits
// judges the values. On a refusal the answer is written.
func (s *server) limitsForm(w http.ResponseWriter, r *http.Request) (string, lite.Limits, bool) {
	var l lite.Limits
	if s.refuseReadOnly(w, r) {
		return "", l, false
	}
	queue := r.PostFormValue("queue")
	err := func() error {
		var err error
		if l.MaxRunning, err = formInt(r, "max_running"); err != nil {
			return err
		}
		if l.Rate, err = formInt(r, "rate"); err != nil {
			return err
		}
		if p := r.PostFormValue("per"); p != "" {
			if l.Per, err = time.ParseDuration(p); err != nil {
				return fmt.Errorf("per must be a duration such as 1s or 1m, not %q", p)
			}
		}
		return nil
	}()
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, err.Error())
		return "", l, false
	}
	return queue, l, true
}

// formInt is the whole number in the form field name, 0 when it is empty.
func formInt(r *http.Request, name string) (int, error) {
	v := r.PostFormValue(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s must be a whole number, not %q", name, v)
	}
	return n, nil
}
