package cmd

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"time"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
)

// jobJSON is a job as the CLI prints it: payload and result as strings
// when they are UTF-8 text, in base64 fields otherwise.
type jobJSON struct {
	ID            int64               `json:"id"`
	Queue         string              `json:"queue"`
	Kind          string              `json:"kind"`
	State         lite.State          `json:"state"`
	Priority      int                 `json:"priority"`
	Payload       *string             `json:"payload,omitempty"`
	PayloadBase64 *string             `json:"payload_base64,omitempty"`
	RunAt         time.Time           `json:"run_at"`
	Attempts      int                 `json:"attempts"`
	MaxAttempts   int                 `json:"max_attempts"`
	Generation    int64               `json:"generation"`
	LeaseToken    string              `json:"lease_token,omitempty"`
	LockedBy      string              `json:"locked_by,omitempty"`
	LeasedAt      *time.Time          `json:"leased_at,omitempty"`
	HeartbeatAt   *time.Time          `json:"heartbeat_at,omitempty"`
	UniqueKey     string              `json:"unique_key,omitempty"`
	Result        *string             `json:"result,omitempty"`
	ResultBase64  *string             `json:"result_base64,omitempty"`
	Errors        []lite.AttemptError `json:"errors"`
	CreatedAt     time.Time           `json:"created_at"`
	FinishedAt    *time.Time          `json:"finished_at,omitempty"`
}

func textOrBase64(b []byte) (text, b64 *string) {
	if b == nil {
		return nil, nil
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return nil, &s
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toJSON(j *lite.Job) jobJSON {
	out := jobJSON{
		ID: j.ID, Queue: j.Queue, Kind: j.Kind, State: j.State, Priority: j.Priority,
		RunAt: j.RunAt, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Generation: j.Generation,
		LeaseToken: j.LeaseToken, LockedBy: j.LockedBy, LeasedAt: optionalTime(j.LeasedAt),
		HeartbeatAt: optionalTime(j.HeartbeatAt), UniqueKey: j.UniqueKey, Errors: j.Errors,
		CreatedAt: j.CreatedAt, FinishedAt: optionalTime(j.FinishedAt),
	}
	if out.Errors == nil {
		out.Errors = []lite.AttemptError{}
	}
	out.Payload, out.PayloadBase64 = textOrBase64(j.Payload)
	out.Result, out.ResultBase64 = textOrBase64(j.Result)
	return out
}

// jobChange is what an admin command did to a job, for --json.
type jobChange struct {
	ID    int64      `json:"id"`
	State lite.State `json:"state"`
	// Generation is the job's new generation where the command bumped it.
	Generation int64 `json:"generation,omitempty"`
}

// writeJSON prints v as indented JSON, with every rune a terminal would
// act on escaped (see escapeJSON).
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(escapeJSON(b), '\n'))
	return err
}
