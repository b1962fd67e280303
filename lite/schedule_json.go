package lite

import (
	"bytes"
	"encoding/json"
	"time"
)

// scheduleJSON is a Schedule's JSON form, in the style of jobJSON: the
// job's fields flattened beside the schedule's, payload as text or base64.
type scheduleJSON struct {
	Name          string    `json:"name"`
	Spec          string    `json:"spec"`
	TimeZone      string    `json:"time_zone"`
	Queue         string    `json:"queue"`
	Kind          string    `json:"kind"`
	Payload       *string   `json:"payload,omitempty"`
	PayloadBase64 []byte    `json:"payload_base64,omitempty"`
	Priority      int       `json:"priority"`
	MaxAttempts   int       `json:"max_attempts"`
	UniqueKey     string    `json:"unique_key,omitempty"`
	Paused        bool      `json:"paused"`
	NextRunAt     time.Time `json:"next_run_at"`
	LastRunAt     time.Time `json:"last_run_at,omitzero"`
	Owner         string    `json:"owner"`
}

// MarshalJSON writes the schedule as `lite schedule ls --json` prints it:
//
//	{"name": "nightly", "spec": "0 3 * * *", "time_zone": "Europe/Berlin",
//	 "queue": "default", "kind": "report", "payload": "{}", "priority": 0,
//	 "max_attempts": 10, "paused": false, "next_run_at": "…Z",
//	 "last_run_at": "…Z", "owner": ""}
//
// time_zone is "" for UTC; times are in UTC, last_run_at left out before
// the first fire; payload and unique_key as a Job's are; owner "" for a
// schedule set by hand, else its Declaration's Owner.
func (s Schedule) MarshalJSON() ([]byte, error) {
	out := scheduleJSON{
		Name: s.Name, Spec: s.Spec, TimeZone: s.TimeZone, Queue: s.Job.Queue, Kind: s.Job.Kind,
		Priority: s.Job.Priority, MaxAttempts: s.Job.MaxAttempts, UniqueKey: s.Job.UniqueKey,
		Paused: s.Paused, NextRunAt: s.NextRunAt.UTC(), LastRunAt: s.LastRunAt.UTC(), Owner: s.Owner,
	}
	out.Payload, out.PayloadBase64 = textOrBase64(s.Job.Payload)
	return json.Marshal(out)
}

// UnmarshalJSON reads the form MarshalJSON writes. Times come back in UTC.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	// Strict: a misspelt field of a declared schedule would otherwise be
	// dropped, and the schedule written without it.
	var in scheduleJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	payload, err := fromTextOrBase64("payload", in.Payload, in.PayloadBase64)
	if err != nil {
		return err
	}
	*s = Schedule{
		Name: in.Name, Spec: in.Spec, TimeZone: in.TimeZone, Paused: in.Paused,
		Job: NewJob{Queue: in.Queue, Kind: in.Kind, Payload: payload, Priority: in.Priority,
			MaxAttempts: in.MaxAttempts, UniqueKey: in.UniqueKey},
		NextRunAt: in.NextRunAt.UTC(), LastRunAt: in.LastRunAt.UTC(), Owner: in.Owner,
	}
	return nil
}
