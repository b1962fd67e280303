package lite

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cadence is a parsed schedule: its cron spec and the zone its wall-clock
// fields are read in.
type cadence struct {
	spec cron.Schedule
	zone *time.Location
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
	// robfig rounds an @every of under a second up to one, and drops a
	// fraction of a second: refuse what it would not do as written.
	if every, ok := s.(cron.ConstantDelaySchedule); ok {
		if asked, err := time.ParseDuration(strings.TrimSpace(strings.TrimPrefix(spec, "@every"))); err == nil && asked != every.Delay {
			return cadence{}, fmt.Errorf("spec %q: @every takes whole seconds, at least one", spec)
		}
	}
	return cadence{spec: s, zone: loc}, nil
}

// after is the first tick later than now, for a schedule whose last
// awaited tick was tick: the ticks between are missed, and caught up by
// the one fire that calls this. An @every schedule keeps the phase of its
// ticks, so that a late fire does not shift the ones after it; a cron
// spec's ticks are wall-clock times in the zone, whatever the phase. The
// zero time means the spec has no tick after now (Feb 30).
func (c cadence) after(tick, now time.Time) time.Time {
	if every, ok := c.spec.(cron.ConstantDelaySchedule); ok && !tick.After(now) && !tick.IsZero() {
		n := now.Sub(tick)/every.Delay + 1
		return tick.Add(n * every.Delay)
	}
	return c.spec.Next(now.In(c.zone))
}
