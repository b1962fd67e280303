package cmd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

// limitCmd shows or sets a queue's limits across every process sharing
// the file.
type limitCmd struct {
	Queue      string  `arg:"" predictor:"queue" help:"The queue to limit; it need not have jobs yet."`
	MaxRunning *int    `name:"max-running" placeholder:"N" help:"At most N of its jobs run at once, across every process; 0 lifts the limit."`
	Rate       *rate   `name:"rate" placeholder:"M/PERIOD" help:"At most M of its jobs start per PERIOD (50/1s, 100/1m, 10/s); none lifts the limit."`
	PerKey     *int    `name:"per-key" placeholder:"N" help:"At most N of its jobs of one key (lite enqueue --key) run at once, across every process; 0 lifts the limit."`
	Sequence   *string `name:"sequence" enum:"continue,block,none" placeholder:"continue|block|none" help:"Run each key's jobs one at a time in enqueue order; after a dead or cancelled job, continue with the next or block the key; none lifts it."`
}

// rate is a --rate value: M starts per period, or none.
type rate struct {
	n   int
	per time.Duration
}

// UnmarshalText reads M/PERIOD, where PERIOD is a Go duration and a bare
// unit means one of it (10/s is 10/1s), or none.
func (r *rate) UnmarshalText(b []byte) error {
	s := string(b)
	if s == "none" {
		*r = rate{}
		return nil
	}
	m, period, ok := strings.Cut(s, "/")
	if !ok {
		return fmt.Errorf("rate %q is not M/PERIOD (50/1s) or none", s)
	}
	n, err := strconv.Atoi(m)
	if err != nil || n <= 0 {
		return fmt.Errorf("rate %q: %q is not a positive whole number of starts", s, m)
	}
	if period != "" && (period[0] < '0' || period[0] > '9') {
		period = "1" + period
	}
	per, err := parseDuration(period)
	switch {
	case errors.Is(err, errDurationTooLong):
		return fmt.Errorf("rate %q: the period is too long: at most %dh", s, math.MaxInt64/int64(time.Hour))
	case err != nil || per <= 0:
		return fmt.Errorf("rate %q: the period is not a positive duration (1s, 1m, 500ms)", s)
	case per < time.Millisecond:
		return fmt.Errorf("rate %q: the period is under a millisecond, the finest time lite stores", s)
	case per%time.Millisecond != 0:
		return fmt.Errorf("rate %q: the period is not a whole number of milliseconds, the finest time lite stores", s)
	}
	*r = rate{n, per}
	return nil
}

// sets says whether a flag sets a limit: with none, lite limit only reads.
func (c *limitCmd) sets() bool {
	return c.MaxRunning != nil || c.Rate != nil || c.PerKey != nil || c.Sequence != nil
}

// Run changes the limits the flags give and keeps the others, then prints
// the queue's limits and who set them (hand, or code:OWNER for a
// program's Declaration). With no flag it only prints them.
func (c *limitCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.MaxRunning != nil && *c.MaxRunning < 0 {
		return usagef("limit: --max-running %d is negative; 0 lifts the limit", *c.MaxRunning)
	}
	if c.PerKey != nil && *c.PerKey < 0 {
		return usagef("limit: --per-key %d is negative; 0 lifts the limit", *c.PerKey)
	}
	l, _, err := queueLimits(ctx, q, c.Queue)
	if err != nil {
		return err
	}
	if c.sets() {
		if c.MaxRunning != nil {
			l.MaxRunning = *c.MaxRunning
		}
		if c.Rate != nil {
			l.Rate, l.Per = c.Rate.n, c.Rate.per
		}
		if c.PerKey != nil {
			l.MaxRunningPerKey = *c.PerKey
		}
		switch {
		case c.Sequence == nil:
		case *c.Sequence == "none":
			l.Sequence = lite.NoSequence
		default:
			l.Sequence = lite.Sequence(*c.Sequence)
		}
		if err := q.SetLimits(ctx, c.Queue, l); err != nil {
			return err
		}
	}
	l, owner, err := queueLimits(ctx, q, c.Queue)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Queue      string  `json:"queue"`
			MaxRunning int     `json:"max_running"`
			Rate       int     `json:"rate"`
			RatePerMS  int64   `json:"rate_per_ms"`
			PerKey     int     `json:"max_running_per_key"`
			Sequence   string  `json:"sequence"`
			Owner      *string `json:"owner"`
		}{c.Queue, l.MaxRunning, l.Rate, l.Per.Milliseconds(), l.MaxRunningPerKey, string(l.Sequence), owner})
	}
	line := "queue " + safe(c.Queue) + ": " + describeLimits(l)
	if owner != nil {
		line += " (" + ownerLabel(*owner) + ")"
	}
	_, err = fmt.Fprintln(env.Stdout, line)
	return err
}

// queueLimits reads queue's limits and who set them: nil when none are
// set (nobody's), "" by hand, or a Declaration's owner.
func queueLimits(ctx context.Context, q *lite.Queue, queue string) (lite.Limits, *string, error) {
	stats, err := q.Stats(ctx)
	if err != nil {
		return lite.Limits{}, nil, err
	}
	for _, s := range stats {
		if s.Queue == queue && s.Limits != (lite.Limits{}) {
			return s.Limits, &s.LimitsOwner, nil
		}
	}
	return lite.Limits{}, nil, nil
}

// ownerLabel names who set a setting: hand, or code:OWNER for the owner
// of the Declaration that declared it.
func ownerLabel(owner string) string {
	if owner == "" {
		return "hand"
	}
	return "code:" + safe(owner)
}

// describeLimits words a queue's limits for a terminal.
func describeLimits(l lite.Limits) string {
	var parts []string
	if l.MaxRunning > 0 {
		parts = append(parts, fmt.Sprintf("at most %d running", l.MaxRunning))
	}
	if l.Rate > 0 {
		parts = append(parts, fmt.Sprintf("%d starts per %s", l.Rate, l.Per))
	}
	if l.MaxRunningPerKey > 0 {
		parts = append(parts, fmt.Sprintf("at most %d running per key", l.MaxRunningPerKey))
	}
	if l.Sequence != lite.NoSequence {
		parts = append(parts, fmt.Sprintf("one at a time per key in order (%s after a dead or cancelled job)", l.Sequence))
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}
