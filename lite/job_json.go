package lite

import (
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"
)

// The JSON forms here are the ones `lite --json` prints, so an application
// can serve a Job or a QueueStats as it is and read it back: snake_case
// names, times in UTC (RFC 3339 with as many fractional digits as they
// need), optional times left out when zero, durations as whole
// milliseconds in a field ending in _ms.

// jobJSON is a Job's JSON form. Payload and result are text when their
// bytes are valid UTF-8, which is what most payloads are, and base64 in
// the *_base64 field otherwise: JSON strings hold UTF-8 only, and bytes
// forced into one would come back changed.
type jobJSON struct {
	ID            int64             `json:"id"`
	Queue         string            `json:"queue"`
	Kind          string            `json:"kind"`
	State         State             `json:"state"`
	Priority      int               `json:"priority"`
	Payload       *string           `json:"payload,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64,omitempty"`
	RunAt         time.Time         `json:"run_at"`
	Attempts      int               `json:"attempts"`
	MaxAttempts   int               `json:"max_attempts"`
	Generation    int64             `json:"generation"`
	LeaseToken    string            `json:"lease_token,omitempty"`
	LockedBy      string            `json:"locked_by,omitempty"`
	LeasedAt      time.Time         `json:"leased_at,omitzero"`
	HeartbeatAt   time.Time         `json:"heartbeat_at,omitzero"`
	UniqueKey     string            `json:"unique_key,omitempty"`
	Key           string            `json:"key,omitempty"`
	ExpiresAt     time.Time         `json:"expires_at,omitzero"`
	Result        *string           `json:"result,omitempty"`
	ResultBase64  []byte            `json:"result_base64,omitempty"`
	Errors        []AttemptError    `json:"errors"`
	CreatedAt     time.Time         `json:"created_at"`
	FinishedAt    time.Time         `json:"finished_at,omitzero"`
	Tags          []string          `json:"tags,omitempty"`
	Meta          map[string]string `json:"meta,omitempty"`
	// Progress is the JSON value reported, as it is (a number for a
	// fraction); note and log are left out when empty.
	Progress     json.RawMessage `json:"progress,omitempty"`
	ProgressNote string          `json:"progress_note,omitempty"`
	Log          []string        `json:"log,omitempty"`
	Parked       string          `json:"parked,omitempty"`
	ParkedOn     string          `json:"parked_on,omitempty"`
	Steps        []StepRecord    `json:"steps,omitempty"`
}

// MarshalJSON writes the job as `lite show --json` prints it:
//
//	{"id": 7, "queue": "mail", "kind": "welcome", "state": "dead",
//	 "priority": 0, "payload": "{\"to\":\"ada\"}", "run_at": "…Z",
//	 "attempts": 2, "max_attempts": 2, "generation": 2,
//	 "lease_token": "…", "locked_by": "host:pid:random",
//	 "leased_at": "…Z", "heartbeat_at": "…Z",
//	 "errors": [{"attempt": 1, "generation": 1, "at": "…Z", "error": "…"}, …],
//	 "created_at": "…Z", "finished_at": "…Z",
//	 "tags": ["signup"], "meta": {"traceparent": "00-…-01"},
//	 "progress": 0.4, "progress_note": "converting", "log": ["…", …],
//	 "parked": "signal", "parked_on": "approved",
//	 "steps": [{"name": "charge", "generation": 1, "result": "…", "recorded_at": "…Z"}, …]}
//
// Payload and result are strings when they are valid UTF-8 and base64 in
// payload_base64 and result_base64 otherwise; a job with no result has
// neither result field. Lease fields, unique_key, key, expires_at,
// finished_at, tags and meta are left out when empty; errors is always an array; progress,
// progress_note, log, parked, parked_on and steps are left out when the
// job has none; a step's result is text or base64 as the job's is.
func (j Job) MarshalJSON() ([]byte, error) {
	out := jobJSON{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, State: j.State, Priority: j.Priority,
		RunAt: j.RunAt.UTC(), Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		Generation: j.Generation, LeaseToken: j.LeaseToken, LockedBy: j.LockedBy,
		LeasedAt: j.LeasedAt.UTC(), HeartbeatAt: j.HeartbeatAt.UTC(), UniqueKey: j.UniqueKey,
		Key: j.Key, ExpiresAt: j.ExpiresAt.UTC(),
		Errors: j.Errors, CreatedAt: j.CreatedAt.UTC(), FinishedAt: j.FinishedAt.UTC(),
		Tags: j.Tags, Meta: j.Meta,
		Progress: j.Progress, ProgressNote: j.ProgressNote, Log: j.Log,
		Parked: j.Parked, ParkedOn: j.ParkedOn, Steps: j.Steps,
	}
	if out.Errors == nil {
		out.Errors = []AttemptError{}
	}
	out.Payload, out.PayloadBase64 = textOrBase64(j.Payload)
	out.Result, out.ResultBase64 = textOrBase64(j.Result)
	return json.Marshal(out)
}

// UnmarshalJSON reads the form MarshalJSON writes. Times come back in UTC.
func (j *Job) UnmarshalJSON(b []byte) error {
	var in jobJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	payload, err := fromTextOrBase64("payload", in.Payload, in.PayloadBase64)
	if err != nil {
		return err
	}
	result, err := fromTextOrBase64("result", in.Result, in.ResultBase64)
	if err != nil {
		return err
	}
	if len(in.Errors) == 0 {
		in.Errors = nil // as a job read from the queue has it
	}
	*j = Job{
		ID: in.ID, Queue: in.Queue, Kind: in.Kind, Payload: payload, Priority: in.Priority,
		State: in.State, RunAt: in.RunAt.UTC(), Attempts: in.Attempts, MaxAttempts: in.MaxAttempts,
		Generation: in.Generation, LeaseToken: in.LeaseToken, LockedBy: in.LockedBy,
		LeasedAt: in.LeasedAt.UTC(), HeartbeatAt: in.HeartbeatAt.UTC(), UniqueKey: in.UniqueKey,
		Key: in.Key, ExpiresAt: in.ExpiresAt.UTC(),
		Result: result, Errors: in.Errors, CreatedAt: in.CreatedAt.UTC(), FinishedAt: in.FinishedAt.UTC(),
		Tags: in.Tags, Meta: in.Meta,
		Progress: in.Progress, ProgressNote: in.ProgressNote, Log: in.Log,
		Parked: in.Parked, ParkedOn: in.ParkedOn, Steps: in.Steps,
	}
	return nil
}

// textOrBase64 puts b in the text field when it is UTF-8 and in the
// base64 field otherwise (encoding/json writes a []byte as base64); nil
// fills neither.
func textOrBase64(b []byte) (text *string, b64 []byte) {
	switch {
	case b == nil:
		return nil, nil
	case utf8.Valid(b):
		s := string(b)
		return &s, nil
	}
	return nil, b
}

func fromTextOrBase64(name string, text *string, b64 []byte) ([]byte, error) {
	switch {
	case text != nil && b64 != nil:
		return nil, errors.New("job: both " + name + " and " + name + "_base64 are set")
	case text != nil:
		return []byte(*text), nil
	}
	return b64, nil
}

// attemptErrorJSON is an AttemptError without its methods, so that its
// MarshalJSON can use the default encoding of the same fields.
type attemptErrorJSON AttemptError

// MarshalJSON writes the attempt's error as
// {"attempt": 1, "generation": 1, "at": "…Z", "error": "…"}, with the time
// in UTC.
func (e AttemptError) MarshalJSON() ([]byte, error) {
	e.At = e.At.UTC()
	return json.Marshal(attemptErrorJSON(e))
}

// queueStatsJSON is QueueStats's JSON form.
type queueStatsJSON struct {
	Queue         string          `json:"queue"`
	Counts        map[State]int64 `json:"counts"`
	OldestReadyMS int64           `json:"oldest_ready_ms"`
	Sleeping      int64           `json:"sleeping"`
	Awaiting      int64           `json:"awaiting"`
	Paused        bool            `json:"paused"`
	MaxRunning    int             `json:"max_running,omitempty"`
	Rate          int             `json:"rate,omitempty"`
	RatePerMS     int64           `json:"rate_per_ms,omitempty"`
	PerKey        int             `json:"max_running_per_key,omitempty"`
	Sequence      Sequence        `json:"sequence,omitempty"`
}

// MarshalJSON writes the stats as `lite stats --json` prints them:
//
//	{"queue": "mail",
//	 "counts": {"available": 3, "cancelled": 0, "dead": 1, "done": 5, "running": 1},
//	 "oldest_ready_ms": 90000, "sleeping": 1, "awaiting": 0,
//	 "paused": false, "max_running": 3, "rate": 50, "rate_per_ms": 1000}
//
// counts names every state, zero or not, so a reader need not know the
// states to show them; oldest_ready_ms is OldestReady in whole
// milliseconds; sleeping and awaiting are the parked jobs counted in
// available; max_running, rate and rate_per_ms (Limits.Per in whole
// milliseconds), max_running_per_key and sequence are left out when there
// is no such limit.
func (s QueueStats) MarshalJSON() ([]byte, error) {
	counts := make(map[State]int64, len(States))
	for _, st := range States {
		counts[st] = s.Counts[st]
	}
	return json.Marshal(queueStatsJSON{Queue: s.Queue, Counts: counts, OldestReadyMS: s.OldestReady.Milliseconds(),
		Sleeping: s.Sleeping, Awaiting: s.Awaiting, Paused: s.Paused, MaxRunning: s.Limits.MaxRunning, Rate: s.Limits.Rate, RatePerMS: s.Limits.Per.Milliseconds(),
		PerKey: s.Limits.MaxRunningPerKey, Sequence: s.Limits.Sequence})
}

// UnmarshalJSON reads the form MarshalJSON writes. Counts keeps the
// states with jobs, as Stats gives them, so stats read back equal the
// stats written.
func (s *QueueStats) UnmarshalJSON(b []byte) error {
	var in queueStatsJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	counts := make(map[State]int64, len(in.Counts))
	for st, n := range in.Counts {
		if n != 0 {
			counts[st] = n
		}
	}
	*s = QueueStats{Queue: in.Queue, Counts: counts, OldestReady: time.Duration(in.OldestReadyMS) * time.Millisecond,
		Sleeping: in.Sleeping, Awaiting: in.Awaiting, Paused: in.Paused, Limits: Limits{MaxRunning: in.MaxRunning, Rate: in.Rate, Per: time.Duration(in.RatePerMS) * time.Millisecond,
			MaxRunningPerKey: in.PerKey, Sequence: in.Sequence}}
	return nil
}
