package web

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
)

// namedAction is an admin action on a queue or a schedule: things with a
// name rather than an id. Names may hold any character but control ones,
// slashes and question marks included, so they travel in a form field
// rather than in the path.
type namedAction struct {
	Name    string // its URL segment
	Title   string // its button
	Confirm string // the question the confirmation page asks
	// applies says whether the action fits a queue or schedule that is
	// paused or not.
	applies func(paused bool) bool
	// do is a method expression of *lite.Queue, such as
	// (*lite.Queue).Pause: hence the queue before the context.
	do func(q *lite.Queue, ctx context.Context, name string) error
}

// Applies reports whether a's button belongs beside a thing that is
// paused or not.
func (a namedAction) Applies(paused bool) bool { return a.applies(paused) }

func unpaused(paused bool) bool { return !paused }
func paused(paused bool) bool   { return paused }
func always(bool) bool          { return true }

// named is a kind of named thing and its actions. The API serves each
// action at POST api/{Path}/{action} with the name in the form field
// Field; the pages ask at GET {Path}/confirm?{Field}=NAME&action=ACTION
// and post to {Path}/{action}, then return to Back.
type named struct {
	Path    string // "queues"
	Field   string // "queue": the form field, and the word the pages use
	Back    string // the page listing them, relative to the root
	Actions []namedAction
}

var queues = named{Path: "queues", Field: "queue", Back: "", Actions: []namedAction{
	{
		Name: "pause", Title: "Pause", applies: unpaused,
		Confirm: "Pause this queue: no process starts its jobs until it is resumed; running jobs finish as usual.",
		do:      (*lite.Queue).Pause,
	},
	{
		Name: "resume", Title: "Resume", applies: paused,
		Confirm: "Resume this queue: its jobs start again.",
		do:      (*lite.Queue).Resume,
	},
}}

var schedules = named{Path: "schedules", Field: "schedule", Back: "schedules", Actions: []namedAction{
	{
		Name: "pause", Title: "Pause", applies: unpaused,
		Confirm: "Pause this schedule: it enqueues nothing until it is resumed.",
		do:      (*lite.Queue).PauseSchedule,
	},
	{
		Name: "resume", Title: "Resume", applies: paused,
		Confirm: "Resume this schedule: it fires again from its next tick.",
		do:      (*lite.Queue).ResumeSchedule,
	},
	{
		Name: "run", Title: "Run now", applies: always,
		Confirm: "Enqueue this schedule's job now, once: its ticks stay as they are, so it still fires at its next one.",
		do: func(q *lite.Queue, ctx context.Context, name string) error {
			_, err := q.RunScheduleNow(ctx, name)
			return err
		},
	},
	{
		Name: "remove", Title: "Remove", applies: always,
		Confirm: "Remove this schedule: it never fires again. Jobs it already enqueued stay.",
		do:      (*lite.Queue).RemoveSchedule,
	},
}}

// find is the action of n named name.
func (n named) find(name string) (namedAction, bool) {
	i := slices.IndexFunc(n.Actions, func(a namedAction) bool { return a.Name == name })
	if i < 0 {
		return namedAction{}, false
	}
	return n.Actions[i], true
}

// actionsFor are the actions a page offers beside a thing that is paused
// or not: none when the handler is read-only.
func (s *server) actionsFor(n named, isPaused bool) []namedAction {
	if s.opts.ReadOnly {
		return nil
	}
	var out []namedAction
	for _, a := range n.Actions {
		if a.Applies(isPaused) {
			out = append(out, a)
		}
	}
	return out
}

// namedDone answers a named action in the API: {"queue": "mail",
// "action": "pause"}.
func namedDone(n named, name string, a namedAction) map[string]string {
	return map[string]string{n.Field: name, "action": a.Name}
}

// routeNamed serves n's actions, in the API and as pages.
func (s *server) routeNamed(mux *http.ServeMux, n named) {
	for _, a := range n.Actions {
		mux.HandleFunc("/api/"+n.Path+"/"+a.Name, s.postOnly(func(w http.ResponseWriter, r *http.Request) {
			name, ok := s.actionName(w, r, n)
			if !ok {
				return
			}
			err := a.do(s.q, r.Context(), name)
			s.reply(w, r, namedDone(n, name, a), err)
		}))
		mux.HandleFunc("/"+n.Path+"/"+a.Name, s.postOnly(func(w http.ResponseWriter, r *http.Request) {
			name, ok := s.actionName(w, r, n)
			if !ok {
				return
			}
			if err := a.do(s.q, r.Context(), name); err != nil {
				s.fail(w, r, status(err), err.Error())
				return
			}
			seeOther(w, root(r)+n.Back)
		}))
	}
	mux.HandleFunc("GET /"+n.Path+"/confirm", func(w http.ResponseWriter, r *http.Request) {
		if s.refuseReadOnly(w, r) {
			return
		}
		a, ok := n.find(r.FormValue("action"))
		if !ok {
			s.fail(w, r, http.StatusBadRequest, "no such action")
			return
		}
		name := r.FormValue(n.Field)
		if !takenName(name) {
			s.fail(w, r, http.StatusBadRequest, "no "+n.Field+" can be named so: a name is UTF-8 text without control characters")
			return
		}
		s.render(w, r, http.StatusOK, "confirm_named", confirmNamedView{Kind: n, Name: name, Action: a})
	})
}

// takenName reports whether lite takes name for a queue or schedule, as
// Pause and SetSchedule judge it. The confirmation pages carry the name
// raw in a hidden field, to post it back intact, so they refuse one that
// names nothing rather than put its control characters in the page.
func takenName(name string) bool {
	return name != "" && utf8.ValidString(name) && !strings.ContainsFunc(name, unicode.IsControl)
}

// actionName is the name of the queue or schedule an action is posted
// for, after refusing it in read-only mode or without a name; on a
// refusal the answer is written.
func (s *server) actionName(w http.ResponseWriter, r *http.Request, n named) (string, bool) {
	if s.refuseReadOnly(w, r) {
		return "", false
	}
	name := r.PostFormValue(n.Field)
	if name == "" {
		s.fail(w, r, http.StatusBadRequest, "the form field "+n.Field+" must name a "+n.Field)
		return "", false
	}
	return name, true
}

// confirmNamedView asks before an action on a queue or schedule.
type confirmNamedView struct {
	Kind   named
	Name   string
	Action namedAction
}
