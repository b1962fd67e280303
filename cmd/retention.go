package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// retentionCmd shows or sets how long finished jobs are kept.
type retentionCmd struct {
	Done      string `help:"Keep done jobs this long: 36h, 7d, forever, or default."`
	Cancelled string `help:"Keep cancelled jobs this long: 36h, 7d, forever, or default."`
	Dead      string `help:"Keep dead jobs this long: 36h, 7d, forever, or default."`
}

// Validate refuses a state's flag given empty (--done "$KEEP" with KEEP
// unset), which would pass for no flag and change nothing.
func (c *retentionCmd) Validate(kctx *kong.Context) error {
	for _, f := range []struct{ flag, value string }{{"done", c.Done}, {"cancelled", c.Cancelled}, {"dead", c.Dead}} {
		if f.value == "" && flagGiven(kctx, f.flag) {
			return usagef("--%s is empty: give a duration (36h, 7d), forever or default", f.flag)
		}
	}
	return nil
}

// Run sets the states given, keeping the others as the database has them,
// then prints the policy, with who set each state not at its default
// (hand, or code:OWNER for a program's Declaration; --json: {"done_ms": N,
// ..., "owners": {"done": "OWNER"}}, null for forever, "" for hand).
func (c *retentionCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	r, err := q.Retention(ctx)
	if err != nil {
		return err
	}
	// Every flag is read before anything is stored: a bad one changes
	// nothing.
	next := r
	if err := setKeeps(&next, c.Done, c.Cancelled, c.Dead); err != nil {
		return usagef("retention: --%s", err)
	}
	if next != r {
		if err := q.SetRetention(ctx, next); err != nil {
			return err
		}
		if r, err = q.Retention(ctx); err != nil {
			return err
		}
	}
	owners, err := q.RetentionOwners(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Done      *int64                `json:"done_ms"`
			Cancelled *int64                `json:"cancelled_ms"`
			Dead      *int64                `json:"dead_ms"`
			Owners    map[lite.State]string `json:"owners"`
		}{millis(r.Done), millis(r.Cancelled), millis(r.Dead), owners})
	}
	for _, s := range []struct {
		state lite.State
		keep  time.Duration
	}{{lite.StateDone, r.Done}, {lite.StateCancelled, r.Cancelled}, {lite.StateDead, r.Dead}} {
		line := fmt.Sprintf("%-10s %s", s.state, lite.FormatRetention(s.keep))
		if owner, ok := owners[s.state]; ok {
			line += " (" + ownerLabel(owner) + ")"
		}
		if _, err := fmt.Fprintln(env.Stdout, line); err != nil {
			return err
		}
	}
	return nil
}

// setKeeps reads each retention given into r ("" keeps r's); an error
// starts with the state's name.
func setKeeps(r *lite.Retention, done, cancelled, dead string) error {
	for _, f := range []struct {
		state lite.State
		value string
		keep  *time.Duration
	}{{lite.StateDone, done, &r.Done}, {lite.StateCancelled, cancelled, &r.Cancelled}, {lite.StateDead, dead, &r.Dead}} {
		if f.value == "" {
			continue
		}
		keep, err := parseKeep(f.value)
		if err != nil {
			return fmt.Errorf("%s %w", f.state, err)
		}
		*f.keep = keep
	}
	return nil
}

// parseKeep reads a retention: "forever", "default" (zero: the library's
// default), a whole number of days ("7d"), or a Go duration ("36h").
func parseKeep(s string) (time.Duration, error) {
	switch s {
	case "forever":
		return lite.KeepForever, nil
	case "default":
		return 0, nil
	}
	// KeepForever is the longest Duration: a retention must be shorter.
	maxDays := int64(lite.KeepForever/day) - 1
	keep, err := parseDuration(s)
	switch {
	case errors.Is(err, errDurationTooLong), err == nil && keep > time.Duration(maxDays)*day:
		return 0, fmt.Errorf("%q is too long: at most %dd, or forever", s, maxDays)
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration (such as 36h or 7d), forever or default", s)
	}
	switch {
	case keep <= 0:
		return 0, fmt.Errorf("%q is not a positive duration: give one such as 36h or 7d, forever or default", s)
	case keep < time.Millisecond:
		return 0, fmt.Errorf("%q is under a millisecond, the finest time lite stores", s)
	}
	return keep, nil
}

func millis(d time.Duration) *int64 {
	if d == lite.KeepForever {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}
