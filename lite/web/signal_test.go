package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestSignalAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		id := parkedAwaitingApproval(t, q, clock)
		signal := func(id int64, form url.Values) (int, string) {
			t.Helper()
			w := post(h, fmt.Sprintf("/api/jobs/%d/signal", id), form)
			if w.Code != http.StatusOK {
				return w.Code, apiError(t, w.Body.Bytes())
			}
			return w.Code, w.Body.String()
		}

		t.Run("a bad signal is refused with the status that says why", func(t *testing.T) {
			is := is.New(t)
			code, msg := signal(999, url.Values{"name": {"approved"}})
			is.Equal(code, http.StatusNotFound)
			is.Equal(msg, "signal job 999: job not found")
			code, msg = signal(id, url.Values{"payload": {"x"}})
			is.Equal(code, http.StatusBadRequest) // no name
			is.Equal(msg, fmt.Sprintf("signal job %d: invalid setting: a signal's name has 1 to 200 bytes", id))
			code, _ = signal(id, url.Values{"name": {strings.Repeat("n", 201)}})
			is.Equal(code, http.StatusBadRequest)
			code, msg = signal(id, url.Values{"name": {"approved"}, "payload": {strings.Repeat("x", lite.DefaultMaxPayloadBytes+1)}})
			is.Equal(code, http.StatusRequestEntityTooLarge)
			is.Equal(msg, fmt.Sprintf("signal job %d: payload of %d bytes: too large (limit %d)", id, lite.DefaultMaxPayloadBytes+1, lite.DefaultMaxPayloadBytes))
			code, msg = signal(id, url.Values{"name": {"approved"}, "payload": {strings.Repeat("x", 10<<20)}})
			is.Equal(code, http.StatusRequestEntityTooLarge) // the body itself
			is.Equal(msg, "the request's body is over its bound of 10 MiB")
			j, err := q.Get(t.Context(), id)
			is.NoErr(err)
			is.Equal(j.Parked, lite.ParkedSignal) // none was sent
		})

		t.Run("a signal sent wakes the job parked awaiting it", func(t *testing.T) {
			is := is.New(t)
			code, body := signal(id, url.Values{"name": {"approved"}, "payload": {"ok by ada"}})
			is.Equal(code, http.StatusOK)
			is.Equal(body, fmt.Sprintf("{\n  \"id\": %d,\n  \"signal\": \"approved\",\n  \"bytes\": 9,\n  \"sent\": true\n}\n", id)) // lite signal --json's
			j, err := q.Get(t.Context(), id)
			is.NoErr(err)
			is.Equal(j.Parked, "")
			is.Equal(j.State, lite.StateAvailable)
			is.True(!j.RunAt.After(clock.Now())) // ready now
		})

		t.Run("a signal with an idempotency key is sent once", func(t *testing.T) {
			is := is.New(t)
			other := enqueue(t, q, lite.NewJob{Kind: "other"})
			form := url.Values{"name": {"approved"}, "idempotency_key": {"delivery-7"}}
			for _, sent := range []bool{true, false} {
				w := post(h, fmt.Sprintf("/api/jobs/%d/signal", other), form)
				is.Equal(w.Code, http.StatusOK)
				var answer struct{ Sent bool }
				decode(t, w.Body.Bytes(), &answer)
				is.Equal(answer.Sent, sent) // the second is not sent
			}
			is.Equal(signalsOf(t, q, other), 1)
			code, msg := signal(other, url.Values{"name": {"approved"}, "idempotency_key": {""}})
			is.Equal(code, http.StatusBadRequest) // as lite signal refuses an empty --idempotency-key
			is.Equal(msg, "the form field idempotency_key is empty: give a key, or leave the field out")
			code, _ = signal(other, url.Values{"name": {"approved"}, "idempotency_key": {strings.Repeat("k", 201)}})
			is.Equal(code, http.StatusBadRequest)
			is.Equal(signalsOf(t, q, other), 1)
		})

		t.Run("a finished job takes no signal: 409", func(t *testing.T) {
			is := is.New(t)
			done := enqueue(t, q, lite.NewJob{Kind: "other"})
			is.NoErr(q.Cancel(t.Context(), done))
			code, msg := signal(done, url.Values{"name": {"approved"}})
			is.Equal(code, http.StatusConflict)
			is.Equal(msg, fmt.Sprintf("signal job %d: invalid job state: the job is cancelled", done))
		})

		t.Run("a job whose signals are full: 429", func(t *testing.T) {
			is := is.New(t)
			full := enqueue(t, q, lite.NewJob{Kind: "other"})
			// All in one statement, as lite's own test fills them: a
			// thousand writes of their own take long under the race detector.
			_, err := q.DB().ExecContext(t.Context(), q.Rebind(`with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
insert into lite_signals (job_id, name, payload, sent_at) select ?, 'tick', ?, 0 from n`), lite.MaxSignals, full, []byte{})
			is.NoErr(err)
			code, msg := signal(full, url.Values{"name": {"tick"}})
			is.Equal(code, http.StatusTooManyRequests)
			is.Equal(msg, fmt.Sprintf("signal job %d: the job's signals are full (it keeps at most %d unconsumed)", full, lite.MaxSignals))
		})
	})
}

func TestTheJobsPageSendsASignal(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		id := enqueue(t, q, lite.NewJob{Kind: "other"})
		page := fmt.Sprintf("/jobs/%d", id)

		t.Run("from the page of a job parked awaiting a signal, the form sends it and wakes the job", func(t *testing.T) {
			is := is.New(t)
			parked := parkedAwaitingApproval(t, q, clock)
			contains(t, jobPage(t, h, parked),
				fmt.Sprintf(`<form method="post" action="../jobs/%d/signal" class="signal">`, parked),
				`<input name="name" value="approved" required>`) // the form names what it awaits
			form := url.Values{"name": {"approved"}, "payload": {"ok by ada"}, "idempotency_key": {formKey(t, jobPage(t, h, parked))}}
			w := post(h, fmt.Sprintf("/jobs/%d/signal", parked), form)
			is.Equal(w.Code, http.StatusSeeOther)
			is.Equal(w.Header().Get("Location"), fmt.Sprintf("../../jobs/%d?signal=sent", parked)) // from jobs/ID/signal
			j, err := q.Get(t.Context(), parked)
			is.NoErr(err)
			is.Equal(j.Parked, "") // woken
			contains(t, get(h, fmt.Sprintf("/jobs/%d?signal=sent", parked)).Body.String(), `<p class="sent">Signal sent`)

			w = post(h, fmt.Sprintf("/jobs/%d/signal", parked), form) // the form posted again
			is.Equal(w.Header().Get("Location"), fmt.Sprintf("../../jobs/%d?signal=again", parked))
			is.Equal(signalsOf(t, q, parked), 1) // sent once
			contains(t, get(h, fmt.Sprintf("/jobs/%d?signal=again", parked)).Body.String(), `<p class="sent">That form had sent its signal already: not sent again.</p>`)
		})

		t.Run("each form carries a key of its own", func(t *testing.T) {
			is := is.New(t)
			first := formKey(t, jobPage(t, h, id))
			is.True(first != formKey(t, jobPage(t, h, id))) // a page read again
		})

		t.Run("an unfinished job's page offers the form, empty", func(t *testing.T) {
			body := jobPage(t, h, id)
			contains(t, body, "<h2>Send a signal</h2>", `<input name="name" value="" required>`,
				`<textarea name="payload" rows="3" cols="50"></textarea>`)
		})

		t.Run("a refused signal shows its error in one line above the form as it was filled in", func(t *testing.T) {
			is := is.New(t)
			w := post(h, page+"/signal", url.Values{"name": {""}, "payload": {"two\nlines"}})
			is.Equal(w.Code, http.StatusBadRequest)
			contains(t, w.Body.String(),
				fmt.Sprintf(`<p class="error signal-error">signal job %d: invalid setting: a signal&#39;s name has 1 to 200 bytes</p>`, id),
				"<textarea name=\"payload\" rows=\"3\" cols=\"50\">two\nlines</textarea>")
		})

		t.Run("a finished job's page has no form, and a signal posted to it shows why it was refused", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(q.Cancel(t.Context(), id))
			is.True(!strings.Contains(jobPage(t, h, id), "Send a signal"))
			w := post(h, page+"/signal", url.Values{"name": {"approved"}})
			is.Equal(w.Code, http.StatusConflict)
			contains(t, w.Body.String(), fmt.Sprintf(`<p class="error signal-error">signal job %d: invalid job state: the job is cancelled</p>`, id))
			is.True(!strings.Contains(w.Body.String(), `class="signal"`)) // still no form
		})

		t.Run("a signal for a job that does not exist is the error page", func(t *testing.T) {
			is := is.New(t)
			w := post(h, "/jobs/999/signal", url.Values{"name": {"approved"}})
			is.Equal(w.Code, http.StatusNotFound)
			contains(t, w.Body.String(), `<p class="error">signal job 999: job not found</p>`)
		})
	})
}

func TestHostileSignalsShowAsText(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		h := handler(q, clock, web.Options{})
		w := worker(t, q, map[string]lite.Handler{"hostile": hostileSteps(q)})
		id := enqueue(t, q, lite.NewJob{Kind: "hostile"})
		litetest.Drain(t, w) // parked awaiting the hostile signal

		t.Run("the form of a job awaiting a hostile name is not filled in with it", func(t *testing.T) {
			is := is.New(t)
			body := hostilePage(t, h, fmt.Sprintf("/jobs/%d", id))
			is.True(strings.Contains(body, `<input name="name" value="" required>`)) // a name that shows escaped is not put in the form raw
		})

		t.Run("a signal of a hostile name and payload, sent through the API, wakes it", func(t *testing.T) {
			is := is.New(t)
			w := post(h, fmt.Sprintf("/api/jobs/%d/signal", id), url.Values{"name": {hostile}, "payload": {hostile}})
			is.Equal(w.Code, http.StatusOK)
			var sent struct{ Signal string }
			decode(t, w.Body.Bytes(), &sent)
			is.Equal(sent.Signal, hostile) // JSON carries it intact
			j, err := q.Get(t.Context(), id)
			is.NoErr(err)
			is.Equal(j.Parked, "")
		})

		t.Run("a refused signal's page puts no hostile value back in its form", func(t *testing.T) {
			is := is.New(t)
			other := enqueue(t, q, lite.NewJob{Kind: "other"})
			big := strings.Repeat("x", lite.DefaultMaxPayloadBytes+1)
			w := post(h, fmt.Sprintf("/jobs/%d/signal", other), url.Values{"name": {hostile}, "payload": {hostile + big}, "idempotency_key": {hostile}})
			is.Equal(w.Code, http.StatusRequestEntityTooLarge)
			body := w.Body.String()
			is.True(!strings.Contains(body, "\x1b"))
			is.True(!strings.Contains(body, "<script>alert"))
			is.True(strings.Contains(body, `<input name="name" value="" required>`))
			is.True(!strings.Contains(body, big)) // nor the payload
			formKey(t, body)                      // a new key in place of the hostile one
		})
	})
}

func TestSignalRefusals(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		id := parkedAwaitingApproval(t, q, clock)
		targets := []string{fmt.Sprintf("/jobs/%d/signal", id), fmt.Sprintf("/api/jobs/%d/signal", id)}
		form := url.Values{"name": {"approved"}, "payload": {"forged"}}
		// unsent checks that no refused signal landed: the job still
		// awaits it.
		unsent := func(t *testing.T) {
			t.Helper()
			j, err := q.Get(t.Context(), id)
			is.New(t).NoErr(err)
			is.New(t).Equal(j.Parked, lite.ParkedSignal)
		}

		t.Run("read-only offers no form and takes no signal", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{ReadOnly: true})
			body := jobPage(t, h, id)
			is.True(!strings.Contains(body, "Send a signal"))
			is.True(!strings.Contains(body, "/signal"))
			for _, target := range targets {
				w := post(h, target, form)
				is.Equal(w.Code, http.StatusForbidden) // the signal
			}
			is.Equal(apiError(t, post(h, targets[1], form).Body.Bytes()), "read-only: actions are turned off")
			unsent(t)
		})

		t.Run("a GET is 405", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, target := range targets {
				w := get(h, target+"?"+form.Encode())
				is.Equal(w.Code, http.StatusMethodNotAllowed)
				is.Equal(w.Header().Get("Allow"), http.MethodPost)
			}
			unsent(t)
		})

		t.Run("a cross-origin POST is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, target := range targets {
				for _, header := range []map[string]string{{"Sec-Fetch-Site": "cross-site"}, {"Origin": "https://attacker.example"}} {
					w := do(h, request{method: http.MethodPost, target: target, form: form, header: header})
					is.Equal(w.Code, http.StatusForbidden)
				}
			}
			unsent(t)
		})

		t.Run("a Host the server does not expect is refused", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{})
			for _, target := range targets {
				w := do(h, request{method: http.MethodPost, target: target, form: form, header: map[string]string{"Host": "attacker.example"}})
				is.Equal(w.Code, http.StatusMisdirectedRequest)
			}
			unsent(t)
		})

		t.Run("without the token it is 401", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			for _, target := range targets {
				is.Equal(post(h, target, form).Code, http.StatusUnauthorized)
			}
			unsent(t)
		})

		t.Run("with the bearer token the API sends it", func(t *testing.T) {
			is := is.New(t)
			h := handler(q, clock, web.Options{Token: "s3cret"})
			w := do(h, request{method: http.MethodPost, target: targets[1], form: form, header: map[string]string{"Authorization": "Bearer s3cret"}})
			is.Equal(w.Code, http.StatusOK)
			j, err := q.Get(t.Context(), id)
			is.NoErr(err)
			is.Equal(j.Parked, "")
		})
	})
}

// signalsOf counts the signals job id was sent.
func signalsOf(t *testing.T, q *lite.Queue, id int64) int {
	t.Helper()
	var n int
	if err := q.DB().QueryRowContext(t.Context(), q.Rebind(`select count(*) from lite_signals where job_id = ?`), id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// formKey is the idempotency key a job page's signal form carries.
func formKey(t *testing.T, page string) string {
	t.Helper()
	m := regexp.MustCompile(`<input type="hidden" name="idempotency_key" value="(dashboard:[0-9a-f]{32})">`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the page's signal form has no idempotency key")
	}
	return m[1]
}
