package lite

import (
	"fmt"
	"testing"
	"time"

	"github.com/matryer/is"
)

// zonesWithChanges are zones whose daylight-saving changes are not a
// one-hour step between 01:00 and 03:00, and two whose changes are.
var zonesWithChanges = []string{
	"Australia/Lord_Howe", // 30-minute steps at 02:00
	"America/Nuuk",        // changes at 22:00 or 23:00 local, the day before
	"Pacific/Chatham",     // +12:45 and +13:45, at 02:45 and 03:45
	"America/Santiago",    // at midnight: 24:00 becomes 23:00, 00:00 becomes 01:00
	"America/Havana",      // at midnight and 01:00
	"Asia/Gaza",           // at 02:00 on a Saturday, or 01:00, dates by decree
	"Antarctica/Troll",    // two hours: +00 and +02
	"Europe/Berlin",
	"America/New_York",
}

// TestEveryWallClockTimeFiresOnceADay checks every quarter hour of the
// day, as a daily spec, in each zone for two years against the IANA data
// read minute by minute: a time that comes on a day fires on that day
// once, at its first instant; a time a gap skips fires once, at the first
// instant after the gap.
func TestEveryWallClockTimeFiresOnceADay(t *testing.T) {
	for _, name := range zonesWithChanges {
		t.Run(name+" fires each quarter hour once a day", func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			zone, err := time.LoadLocation(name)
			is.NoErr(err)
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, zone)
			to := from.AddDate(2, 0, 0)
			want, changes := oracleTicks(zone, from, to)
			is.True(changes > 0) // the zone changes in these years, or the table proves nothing
			for h := range 24 {
				for m := 0; m < 60; m += 15 {
					c, err := parseCadence(fmt.Sprintf("%d %d * * *", m, h), name)
					is.NoErr(err)
					var got []time.Time
					for tick := c.after(time.Time{}, from.Add(-time.Nanosecond)); tick.Before(to); tick = c.after(tick, tick) {
						got = append(got, tick)
					}
					key := h*60 + m
					is.Equal(len(got), len(want[key])) // one tick a day
					for i := range got {
						if !got[i].Equal(want[key][i]) {
							t.Fatalf("%02d:%02d: tick %d at %s, want %s", h, m, i, got[i].In(zone), want[key][i].In(zone))
						}
					}
				}
			}
		})
	}
}

// oracleTicks walks [from, to) a minute at a time and, for each minute of
// the day, lists the instants a daily tick at it fires: the first instant
// whose wall clock reads it, on each day, or, when a change skips it, the
// first instant after the change. It also counts the changes it saw.
func oracleTicks(zone *time.Location, from, to time.Time) (map[int][]time.Time, int) {
	ticks := map[int][]time.Time{}
	// wallOf is the wall-clock minute t reads, counted from 1970-01-01
	// 00:00; it looks the zone up once per period of one offset.
	var offset int64
	var periodEnd time.Time
	wallOf := func(t time.Time) int64 {
		if !t.Before(periodEnd) || periodEnd.IsZero() {
			_, o := t.In(zone).Zone()
			_, periodEnd = t.In(zone).ZoneBounds()
			if periodEnd.IsZero() {
				periodEnd = to.Add(time.Hour) // no change ahead
			}
			offset = int64(o)
		}
		return (t.Unix() + offset) / 60
	}
	changes := 0
	// high is the latest wall-clock minute that came: every one up to it
	// has come (a gap's skipped minutes come as it ends), so one comes
	// for the first time when the clock first passes it.
	high := wallOf(from.Add(-time.Minute))
	for at := from; at.Before(to); at = at.Add(time.Minute) {
		wall := wallOf(at)
		if wall != high+1 && wall != high {
			changes++
		}
		for w := high + 1; w <= wall; w++ {
			if key := int(w % (24 * 60)); key%15 == 0 {
				ticks[key] = append(ticks[key], at)
			}
		}
		high = max(high, wall)
	}
	return ticks, changes
}
