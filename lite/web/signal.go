package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"

	"github.com/liteq/lite/lite"
)

// maxSignalBody bounds the body of a posted signal: Go's own bound on a
// form, here as an error the answer can tell apart (413). The payload's
// own bound is the queue's Options.MaxPayloadBytes, which Signal checks.
const maxSignalBody = 10 << 20

// routeSignal serves sending a signal to a job (see lite.Queue.Signal):
// POST api/jobs/{id}/signal and, from the job's page, POST
// jobs/{id}/signal, each with the form fields name, payload and
// idempotency_key (optional: SignalOnce). The page's form is its own
// confirmation, as the limits form is: filling it in is the decision.
func (s *server) routeSignal(mux *http.ServeMux) {
	mux.HandleFunc("/api/jobs/{id}/signal", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		id, f, ok := s.signalForm(w, r)
		if !ok {
			return
		}
		sent, err := s.signal(r.Context(), id, f)
		s.reply(w, r, signalSent{ID: id, Signal: f.Name, Bytes: len(f.Payload), Sent: sent}, err)
	}))
	mux.HandleFunc("/jobs/{id}/signal", s.postOnly(func(w http.ResponseWriter, r *http.Request) {
		id, f, ok := s.signalForm(w, r)
		if !ok {
			return
		}
		sent, err := s.signal(r.Context(), id, f)
		switch {
		case err == nil:
			outcome := "sent"
			if !sent {
				outcome = "again"
			}
			seeOther(w, root(r)+"jobs/"+strconv.FormatInt(id, 10)+"?signal="+outcome)
		case errors.Is(err, lite.ErrNotFound):
			s.fail(w, r, status(err), err.Error())
		default:
			// The job's page again: the error above the form, and the
			// form as it was filled in (nothing was sent: its key too).
			f.Error = err.Error()
			s.renderJob(w, r, status(err), id, f)
		}
	}))
}

// signal sends f to job id, once per its key when it has one; sent is
// false for a key the job has had already.
func (s *server) signal(ctx context.Context, id int64, f signalView) (sent bool, err error) {
	if f.Key != "" {
		return s.q.SignalOnce(ctx, id, f.Name, f.Key, []byte(f.Payload))
	}
	return true, s.q.Signal(ctx, id, f.Name, []byte(f.Payload))
}

// signalSent answers POST api/jobs/{id}/signal as `lite signal --json`
// prints: Sent is false for an idempotency key the job has had.
type signalSent struct {
	ID     int64  `json:"id"`
	Signal string `json:"signal"`
	Bytes  int    `json:"bytes"`
	Sent   bool   `json:"sent"`
}

// signalView is the job page's form for a signal: what it holds (Key is
// a hidden idempotency key, new with each form, so that a form posted
// twice sends once), the error of the signal it sent if one failed, and
// Outcome, "sent" or "again" (the form had been posted already), after
// one was posted.
type signalView struct {
	Name, Payload, Key string
	Error              string
	Outcome            string
}

// signalForm is the job and the signal a request posts, after refusing
// it in read-only mode, for a malformed id, a body too large to read or
// an empty idempotency key; on a refusal the answer is written.
func (s *server) signalForm(w http.ResponseWriter, r *http.Request) (int64, signalView, bool) {
	id, err := s.actionID(w, r)
	if err != nil {
		return 0, signalView{}, false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxSignalBody)
	// ParseForm first: ParseMultipartForm drops its error for a body that
	// is not multipart.
	err = r.ParseForm()
	if err == nil {
		if err = r.ParseMultipartForm(maxSignalBody); errors.Is(err, http.ErrNotMultipart) {
			err = nil
		}
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			s.fail(w, r, http.StatusRequestEntityTooLarge, "the request's body is over its bound of 10 MiB")
			return 0, signalView{}, false
		}
		s.fail(w, r, http.StatusBadRequest, "the form does not parse: "+err.Error())
		return 0, signalView{}, false
	}
	f := signalView{Name: r.PostFormValue("name"), Payload: r.PostFormValue("payload"), Key: r.PostFormValue("idempotency_key")}
	if _, given := r.PostForm["idempotency_key"]; given && f.Key == "" {
		// As lite signal refuses --idempotency-key "": it would send with none.
		s.fail(w, r, http.StatusBadRequest, "the form field idempotency_key is empty: give a key, or leave the field out")
		return 0, signalView{}, false
	}
	return id, f, true
}

// formKey is a new idempotency key for a signal's form.
func formKey() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails: crypto/rand panics rather than return an error
	return "dashboard:" + hex.EncodeToString(b)
}

// shownBack is the form of f fit to fill in again on the page: a value
// that would show other than as it is (control or format characters,
// invalid UTF-8) is left empty rather than put in the page raw, and a
// key so left is a new one.
func shownBack(f signalView) signalView {
	if field(f.Name) != f.Name {
		f.Name = ""
	}
	if block(f.Payload) != f.Payload {
		f.Payload = ""
	}
	if f.Key == "" || field(f.Key) != f.Key {
		f.Key = formKey()
	}
	return f
}
