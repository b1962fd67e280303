package lite

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cadence is a parsed schedule: an @every interval, or a cron spec's
// wall-clock times and the zone they are read in.
type cadence struct {
	every time.Duration
	wall  *cron.SpecSchedule
	zone  *time.Location
}

// parseCadence reads a cron spec (five fields, or a descriptor such as
// @daily or @every 5m) in the IANA zone named by zone, "" meaning UTC.
func parseCadence(spec, zone string) (cadence, error) {
	// robfig reads a TZ= prefix itself, and without one it uses the
	// host's zone: the zone must come from TimeZone alone, so that every
	// host computes the same ticks.
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return cadence{}, fmt.Errorf("spec %q: give the time zone as the schedule's zone, not in the spec", spec)
	}
	if zone == "" {
		zone = "UTC"
	}
	if zone == "Local" {
		return cadence{}, errors.New(`time zone "Local" differs from host to host: name the zone (Europe/Berlin)`)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		return cadence{}, fmt.Errorf("time zone %q: %w", zone, err)
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return cadence{}, fmt.Errorf("spec %q: %w", spec, err)
	}
	switch s := s.(type) {
	case cron.ConstantDelaySchedule:
		// robfig rounds an @every of under a second up to one, and drops
		// a fraction of a second: refuse what it would not do as written.
		if asked, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(spec, "@every"))); err == nil && asked != s.Delay {
			return cadence{}, fmt.Errorf("spec %q: @every takes whole seconds, at least one", spec)
		}
		return cadence{every: s.Delay, zone: loc}, nil
	case *cron.SpecSchedule:
		return cadence{wall: s, zone: loc}, nil
	default:
		return cadence{}, fmt.Errorf("spec %q: a schedule of type %T is not handled", spec, s)
	}
}

// after is the first tick later than now, for a schedule whose last
// awaited tick was tick: the ticks between are missed, and caught up by
// the one fire that calls this. An @every schedule keeps the phase of its
// ticks, so that a late fire does not shift the ones after it; a cron
// spec's ticks are wall-clock times in the zone, whatever the phase. The
// zero time means the spec has no tick after now (Feb 30).
//
// It is never tick itself, nor earlier, even when now is earlier than
// tick: a fire reads the clock once it holds the schedule's row, and that
// reading can be behind the one that found the tick due (a clock stepped
// back; on PostgreSQL each resync with the server's clock steps it by
// milliseconds either way). A schedule moved on to the tick it just
// enqueued would enqueue it again.
func (c cadence) after(tick, now time.Time) time.Time {
	if now.Before(tick) {
		now = tick
	}
	if c.every > 0 {
		if !tick.IsZero() {
			n := now.Sub(tick)/c.every + 1
			return tick.Add(n * c.every)
		}
		return now.Add(c.every).Truncate(time.Second)
	}
	return nextWall(c.wall, c.zone, now)
}

// wallYears bounds the walk for a spec's next matching day, as robfig's
// own Next does: a spec with none in five years has none (Feb 30).
const wallYears = 5

// starBit marks a cron field given as "*" (robfig's own marker), which
// changes how day of month and day of week combine.
const starBit = 1 << 63

// nextWall is the first instant after now at which one of s's wall-clock
// times comes in zone. Each of them fires once on each day it matches:
// a time that comes twice (in the hour a fall-back repeats) at its first
// instant, and a time that does not come (in a spring-forward gap) at the
// first instant after the gap. robfig's own Next instead skips a whole
// day in zones whose change is not a one-hour step between 01:00 and
// 03:00 (a 30-minute one, one at midnight, one at 23:00).
func nextWall(s *cron.SpecSchedule, zone *time.Location, now time.Time) time.Time {
	y, m, d := now.In(zone).Date()
	hours, minutes, seconds := bits(s.Hour, 24), bits(s.Minute, 60), bits(s.Second, 60)
	// A gap across midnight moves a tick of the day before into today.
	day := time.Date(y, m, d-1, 0, 0, 0, 0, time.UTC)
	for end := day.AddDate(wallYears, 0, 0); day.Before(end); day = day.AddDate(0, 0, 1) {
		if !matchesDay(s, day) {
			continue
		}
		for _, h := range hours {
			for _, mi := range minutes {
				for _, sec := range seconds {
					wall := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(sec)*time.Second)
					if at := wallInstant(wall, zone); at.After(now) {
						return at
					}
				}
			}
		}
	}
	return time.Time{}
}

// bits lists the values below n whose bit field has, in order.
func bits(field uint64, n int) []int {
	var out []int
	for v := range n {
		if field&(1<<v) != 0 {
			out = append(out, v)
		}
	}
	return out
}

// matchesDay reports whether day (its date in UTC's fields) is one of s's
// days, as cron reads them: day of month and day of week must both match
// when either is "*", and either may when both are given.
func matchesDay(s *cron.SpecSchedule, day time.Time) bool {
	if s.Month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom := s.Dom&(1<<uint(day.Day())) != 0
	dow := s.Dow&(1<<uint(day.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// wallReach is how far from a wall-clock time the instants it may come
// at lie, with room to spare: UTC offsets run from -12:00 to +14:00.
const wallReach = 36 * time.Hour

// wallInstant is the instant at which wall (a wall-clock time in UTC's
// fields) comes in zone: its first when it comes twice, and the first
// instant after the gap when a change skips it. Near a change the
// candidates are wall less each offset the zone has within wallReach of
// it, which covers every zone's changes (none has two within that).
func wallInstant(wall time.Time, zone *time.Location) time.Time {
	// Most days are a day and a half from any change, and have one answer.
	_, offset := wall.In(zone).Zone()
	at := wall.Add(-time.Duration(offset) * time.Second)
	if start, end := at.In(zone).ZoneBounds(); (start.IsZero() || at.Sub(start) > wallReach) && (end.IsZero() || end.Sub(at) > wallReach) {
		return at
	}
	var first, latest time.Time
	for _, probe := range []time.Duration{-wallReach, 0, wallReach} {
		_, offset := wall.Add(probe).In(zone).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if sameWall(at.In(zone), wall) && (first.IsZero() || at.Before(first)) {
			first = at
		}
		if at.After(latest) {
			latest = at
		}
	}
	if !first.IsZero() {
		return first
	}
	// In a gap, wall less the offset before it falls after the gap, in
	// the period that the change starts.
	start, _ := latest.In(zone).ZoneBounds()
	return start
}

// sameWall reports whether t reads wall (in UTC's fields) on its clock.
func sameWall(t, wall time.Time) bool {
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, m, d, h, mi, s, 0, time.UTC).Equal(wall)
}
