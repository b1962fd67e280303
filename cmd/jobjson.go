package cmd

import (
	"encoding/json"
	"io"

	"github.com/liteq/lite/lite"
)

// Jobs and queue stats print in the JSON forms the lite package defines
// (Job.MarshalJSON, QueueStats.MarshalJSON), so an application serving
// them from the library and the CLI agree byte for byte.

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
