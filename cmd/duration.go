package cmd

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"
)

// day is the day of a duration's d suffix: 24 hours, as retention and
// purge count them, whatever the clock does at a DST change.
const day = 24 * time.Hour

// days is a duration that starts with a whole number of days: 7d, -3d,
// 1d12h.
var days = regexp.MustCompile(`^([-+]?)([0-9]+)d(.*)$`)

// errDurationTooLong is a duration past the 290 years a time.Duration
// holds.
var errDurationTooLong = fmt.Errorf("too long: at most %dd", math.MaxInt64/int64(day))

// parseDuration reads a duration as every flag of lite takes one: a Go
// duration (90s, 1h30m) with, first, a whole number of days if wanted
// (7d, 1d12h).
func parseDuration(s string) (time.Duration, error) {
	m := days.FindStringSubmatch(s)
	if m == nil {
		d, err := time.ParseDuration(s)
		if err != nil && durationOverflows(s) {
			return 0, errDurationTooLong
		}
		return d, err
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || n > math.MaxInt64/int64(day) {
		return 0, errDurationTooLong
	}
	d := time.Duration(n) * day
	if rest := m[3]; rest != "" {
		r, err := time.ParseDuration(rest)
		switch {
		case durationOverflows(rest):
			return 0, errDurationTooLong
		case err != nil || strings.ContainsAny(rest[:1], "+-"):
			return 0, fmt.Errorf("time: invalid duration %q", s)
		case r > math.MaxInt64-d:
			return 0, errDurationTooLong
		}
		d += r
	}
	if m[1] == "-" {
		d = -d
	}
	return d, nil
}

// digits are the numbers of a duration's terms.
var digits = regexp.MustCompile(`[0-9]+`)

// durationOverflows says whether s failed time.ParseDuration only because
// it is too long: written as a duration should be, its numbers too large
// for the 290 years a time.Duration holds. "1000000000h" overflows;
// "5parsecs" does not.
func durationOverflows(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return false
	}
	_, err := time.ParseDuration(digits.ReplaceAllString(s, "1"))
	return err == nil
}

// durationMapper decodes every time.Duration flag with parseDuration.
var durationMapper = kong.TypeMapper(reflect.TypeFor[time.Duration](), kong.MapperFunc(func(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	d, err := parseDuration(s)
	switch {
	case errors.Is(err, errDurationTooLong):
		return fmt.Errorf("%q is %w", s, err)
	case err != nil:
		return fmt.Errorf("%q is not a duration: give one such as 90s, 1h30m or 7d", s)
	}
	target.SetInt(int64(d))
	return nil
}))
