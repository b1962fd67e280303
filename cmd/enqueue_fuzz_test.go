package cmd

import (
	"testing"
	"unicode/utf8"
)

// FuzzParseLine feeds arbitrary lines to the JSON Lines decoder of
// lite enqueue --file: it must either refuse a line or return a job whose
// string payload is the payload it was given, and never panic.
func FuzzParseLine(f *testing.F) {
	for _, seed := range []string{
		`{"payload":"text"}`,
		`{"queue":"mail","kind":"send","payload":{"to":"ada"},"priority":3}`,
		`{"payload":"x","delay":"90s","max_attempts":2,"unique_key":"k"}`,
		`{"payload":null}`,
		`{"run_at":"2026-01-02T03:04:05Z"}`,
		`{"payload":"\u00e9\ud83d\ude00"}`,
		`{"delay":"forever"}`,
		`{"unknown":1}`,
		`[1,2,3]`,
		`{"payload":`,
		``,
	} {
		f.Add(seed)
	}
	c := &enqueueCmd{Queue: "default", Kind: "default"}
	f.Fuzz(func(t *testing.T, line string) {
		step, err := c.parseLine([]byte(line))
		j := step.Job
		if err != nil {
			return
		}
		if j.Queue == "" || j.Kind == "" {
			t.Fatalf("line %q: empty queue or kind %+v", line, j)
		}
		if j.Payload != nil && !utf8.Valid(j.Payload) && utf8.ValidString(line) {
			t.Fatalf("line %q: valid UTF-8 in, invalid payload out", line)
		}
	})
}
