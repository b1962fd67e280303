package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/liteq/lite/lite"
)

// retentionCmd shows or sets how long finished jobs are kept.
type retentionCmd struct {
	Done      string `help:"Keep done jobs this long: 36h, 7d, forever, or default."`
	Cancelled string `help:"Keep cancelled jobs this long: 36h, 7d, forever, or default."`
	Dead      string `help:"Keep dead jobs this long: 36h, 7d, forever, or default."`
}

// Run sets the states given, keeping the others as the database has them,
// then prints the policy (--json: {"done_ms": N, ...}, null for forever).
func (c *retentionCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	r, err := q.Retention(ctx)
	if err != nil {
		return err
	}
	// Every flag is read before anything is stored: a bad one changes
	// nothing.
	next := r
	for _, f := range []struct {
		state lite.State
		value string
		keep  *time.Duration
	}{{lite.StateDone, c.Done, &next.Done}, {lite.StateCancelled, c.Cancelled, &next.Cancelled}, {lite.StateDead, c.Dead, &next.Dead}} {
		if f.value == "" {
			continue
		}
		keep, err := parseKeep(f.value)
		if err != nil {
			return usagef("retention: --%s %s", f.state, err)
		}
		*f.keep = keep
	}
	if next != r {
		if err := q.SetRetention(ctx, next); err != nil {
			return err
		}
		if r, err = q.Retention(ctx); err != nil {
			return err
		}
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Done      *int64 `json:"done_ms"`
			Cancelled *int64 `json:"cancelled_ms"`
			Dead      *int64 `json:"dead_ms"`
		}{millis(r.Done), millis(r.Cancelled), millis(r.Dead)})
	}
	_, err = fmt.Fprintf(env.Stdout, "done       %s\ncancelled  %s\ndead       %s\n",
		lite.FormatRetention(r.Done), lite.FormatRetention(r.Cancelled), lite.FormatRetention(r.Dead))
	return err
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
