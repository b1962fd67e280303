package cmd

import (
	"context"
	"fmt"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// signalCmd is Signal from the shell.
type signalCmd struct {
	ID      int64  `arg:"" help:"The job's id."`
	Name    string `arg:"" help:"The signal's name."`
	Payload string `arg:"" optional:"" help:"The payload its await prints; - reads it from standard input (a payload over a shell argument's size)."`
	Key     string `name:"idempotency-key" placeholder:"KEY" help:"Send it once per job: a signal of this key the job has had already is not sent again (a sender that may deliver twice)."`
}

// signalJSON is what signal --json prints.
type signalJSON struct {
	ID     int64  `json:"id"`
	Signal string `json:"signal"`
	Bytes  int    `json:"bytes"`
	Sent   bool   `json:"sent"` // false for a key the job has had
}

// Validate refuses an empty key given, which would send with none.
func (c *signalCmd) Validate(kctx *kong.Context) error {
	if c.Key == "" && flagGiven(kctx, "idempotency-key") {
		return usagef("--idempotency-key is empty: give a key, or leave the flag out")
	}
	return nil
}

// Run sends the signal.
func (c *signalCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	payload := []byte(c.Payload)
	if c.Payload == "-" {
		var err error
		// The shell's queue has the default limit: reading stops past it.
		if payload, err = readCapped(env.Stdin, lite.DefaultMaxPayloadBytes); err != nil {
			return fmt.Errorf("signal job %d: payload: %w", c.ID, err)
		}
	}
	sent := true
	var err error
	if c.Key != "" {
		sent, err = q.SignalOnce(ctx, c.ID, c.Name, c.Key, payload)
	} else {
		err = q.Signal(ctx, c.ID, c.Name, payload)
	}
	if err != nil {
		return jobError("signal", c.ID, err)
	}
	switch {
	case g.JSON:
		return writeJSON(env.Stdout, signalJSON{ID: c.ID, Signal: c.Name, Bytes: len(payload), Sent: sent})
	case !sent:
		_, err = fmt.Fprintf(env.Stdout, "job %d had a signal of key %s already: %s not sent\n", c.ID, safe(c.Key), safe(c.Name))
	default:
		_, err = fmt.Fprintf(env.Stdout, "job %d signalled %s\n", c.ID, safe(c.Name))
	}
	return err
}
