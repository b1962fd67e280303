package web

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

// A job's durable record as its page shows it: each step it recorded,
// oldest first, and lite's own records among them (named "lite:...")
// said for what they are. Every name, result and payload is the job's
// text, escaped as every job field is.

// stepEntry is one record of the timeline. Name is the record's name as
// lite keeps it; What says what the record is, in words (for lite's
// own); Preview is a step's result or the payload a wait got, cut;
// Outcomes are the jobs an await got.
type stepEntry struct {
	Name       string
	Generation int64
	RecordedAt time.Time
	Own        bool // one of lite's own records
	What       string
	Preview    string
	Outcomes   []lite.Dependency
}

// ownRecord begins the names of lite's own records among a job's steps.
const ownRecord = "lite:"

// timeline is the entries of steps, in their order.
func timeline(steps []lite.StepRecord, now time.Time) []stepEntry {
	out := make([]stepEntry, len(steps))
	for i, s := range steps {
		e := stepEntry{Name: field(s.Name), Generation: s.Generation, RecordedAt: s.RecordedAt}
		if rest, ok := strings.CutPrefix(s.Name, ownRecord); ok {
			e.Own = true
			describeOwn(&e, rest, s.Result, now)
		} else {
			e.Preview = preview(s.Result)
		}
		out[i] = e
	}
	return out
}

// numbered is the "#N" a run's sleeps and waits carry in Go, not in
// the shell (whose are named).
var numbered = regexp.MustCompile(`#[0-9]+$`)

// describeOwn says what lite's record rest (its name after "lite:")
// with result b is. Its result tells a wait's deadline (a number) from
// what the wait got (an object); a record that does not decode as its
// name says shows its result as a step's does.
func describeOwn(e *stepEntry, rest string, b []byte, now time.Time) {
	t, isTime := recordedTime(b)
	switch {
	case strings.HasPrefix(rest, "sleep") && isTime:
		e.What = "sleep until " + when(t, now)
		return
	case strings.HasPrefix(rest, "park@"):
		if p, ok := parkRequest(b); ok {
			e.What = "the run's command asked to park it: " + p.says(now)
			return
		}
	case strings.HasPrefix(rest, "await#"):
		var outcomes []lite.Dependency
		if json.Unmarshal(b, &outcomes) == nil {
			e.What, e.Outcomes = fmt.Sprintf("awaited %d jobs, all ended:", len(outcomes)), outcomes
			if len(outcomes) == 1 {
				e.What = "awaited 1 job, ended:"
			}
			return
		}
	case strings.HasPrefix(rest, "signal:") && isTime:
		e.What = "wait for signal " + signalOf(rest) + deadline(t, now)
		return
	case strings.HasPrefix(rest, "signal:"):
		var got struct {
			Payload  []byte `json:"payload"`
			TimedOut bool   `json:"timed_out"`
		}
		if json.Unmarshal(b, &got) == nil && strings.HasSuffix(rest, ":got") {
			name := signalOf(strings.TrimSuffix(rest, ":got"))
			if got.TimedOut {
				e.What = "no signal " + name + " before its timeout"
				return
			}
			e.What, e.Preview = "got signal "+name+":", preview(got.Payload)
			return
		}
	}
	e.What, e.Preview = "lite's own record", preview(b)
}

// signalOf is the signal's name in a wait's record name rest, escaped:
// "signal:approved#1" is approved.
func signalOf(rest string) string {
	return field(numbered.ReplaceAllString(strings.TrimPrefix(rest, "signal:"), ""))
}

// recordedTime is b as a time in unix milliseconds, as a sleep's or wait's
// record holds it.
func recordedTime(b []byte) (time.Time, bool) {
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// deadline says when a wait for a signal times out: never, for the
// wake time of a wait without one (year 9999).
func deadline(t, now time.Time) string {
	if t.Year() >= 9999 {
		return ", no timeout"
	}
	return ", timeout at " + when(t, now)
}

// shellPark is the park a shell command (`lite sleep`, `lite
// await-signal`) asks for its run.
type shellPark struct {
	Until  int64  `json:"until"`
	Reason string `json:"reason"`
	Signal string `json:"signal"`
}

func parkRequest(b []byte) (shellPark, bool) {
	var p shellPark
	return p, json.Unmarshal(b, &p) == nil && p.Reason != ""
}

func (p shellPark) says(now time.Time) string {
	until := time.UnixMilli(p.Until).UTC()
	if p.Reason == lite.ParkedSignal {
		return "await signal " + field(p.Signal) + deadline(until, now)
	}
	return field(p.Reason) + " until " + when(until, now)
}

// preview is the start of a result or payload, escaped and cut: it reads
// no more of b than a row shows.
func preview(b []byte) string {
	if len(b) > previewBytes {
		b = b[:previewBytes]
	}
	return cut(field(string(b)))
}

// parkedView says what a parked job waits for: Reason is its marker
// (ParkedSleep, ParkedSignal, ParkedAwait), Says the words for it, and
// Ready that its time came (its sleep, or its wait's timeout, is over)
// though no worker has taken it yet.
type parkedView struct {
	Reason string
	Says   string
	Ready  bool
}

// parkedOf is j's parked marker as its page shows it; the zero view for
// a job not parked.
func parkedOf(j *lite.Job, now time.Time) parkedView {
	v := parkedView{Reason: j.Parked}
	switch j.Parked {
	case "":
	case lite.ParkedSleep:
		v.Says = "sleeping until " + when(j.RunAt, now)
	case lite.ParkedSignal:
		v.Says = "awaiting signal " + field(j.ParkedOn) + deadline(j.RunAt, now)
	case lite.ParkedAwait:
		v.Says = "awaiting the jobs it waits for (see Workflow)"
	default:
		v.Says = field(j.Parked)
	}
	v.Ready = j.State == lite.StateAvailable && j.Parked != lite.ParkedAwait && !j.RunAt.After(now)
	return v
}

// parkedLabel is what a parked job's state shows as, as lite ls shows it:
// sleeping or awaiting while its time has not come, else "".
func parkedLabel(j *lite.Job, now time.Time) string {
	if j.State != lite.StateAvailable || !j.RunAt.After(now) {
		return ""
	}
	switch j.Parked {
	case lite.ParkedSleep:
		return "sleeping"
	case lite.ParkedSignal:
		return "awaiting"
	}
	return ""
}
