package lite_test

import (
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// firedTicks sets the schedules (each enqueueing its name as the kind),
// walks the clock from from to to in ten-minute steps firing at each, and
// returns each schedule's ticks as wall-clock times in loc.
func firedTicks(t *testing.T, e testEngine, loc *time.Location, from, to time.Time, specs map[string]string) map[string][]string {
	t.Helper()
	clock := newFakeClock()
	clock.now = from
	q, _ := e.mustOpen(t, clock)
	for name, spec := range specs {
		mustSetSchedule(t, q, lite.Schedule{Name: name, Spec: spec, TimeZone: loc.String(), Job: lite.NewJob{Kind: name}})
	}
	for clock.Now().Before(to) {
		clock.Advance(10 * time.Minute)
		mustFire(t, q)
	}
	ticks := map[string][]string{}
	for _, j := range allJobs(t, q) {
		ticks[j.Kind] = append(ticks[j.Kind], j.RunAt.In(loc).Format("01-02 15:04 MST"))
	}
	return ticks
}

// TestScheduleAcrossDaylightSavingChanges runs schedules in New York
// across both of 2026's changes: wall-clock schedules fire at their local
// time on both sides of a change, and the skipped and repeated hours
// behave as Schedule.TimeZone documents: a time in the gap fires once as
// it ends, a time that comes twice fires once, at its first instant.
func TestScheduleAcrossDaylightSavingChanges(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ny, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		t.Run("spring forward fires a time of the skipped hour as the gap ends", func(t *testing.T) {
			is := is.New(t)
			got := firedTicks(t, e, ny, time.Date(2026, 3, 7, 0, 0, 0, 0, ny), time.Date(2026, 3, 9, 4, 0, 0, 0, ny),
				map[string]string{"nine": "0 9 * * *", "two-thirty": "30 2 * * *", "hourly": "0 * * * *"})
			is.Equal(got["nine"], []string{"03-07 09:00 EST", "03-08 09:00 EDT"})                             // 9:00 local either side: 23 hours apart
			is.Equal(got["two-thirty"], []string{"03-07 02:30 EST", "03-08 03:00 EDT", "03-09 02:30 EDT"})    // 02:30 never came on the 8th
			is.Equal(got["hourly"][24:27], []string{"03-08 01:00 EST", "03-08 03:00 EDT", "03-08 04:00 EDT"}) // one real hour apart
			is.Equal(len(got["hourly"]), 51)                                                                  // every real hour from 01:00 on the 7th to 04:00 on the 9th
		})
		t.Run("fall back fires a time of the repeated hour once", func(t *testing.T) {
			is := is.New(t)
			got := firedTicks(t, e, ny, time.Date(2026, 10, 31, 0, 0, 0, 0, ny), time.Date(2026, 11, 2, 4, 0, 0, 0, ny),
				map[string]string{"nine": "0 9 * * *", "one-thirty": "30 1 * * *", "hourly": "0 * * * *"})
			is.Equal(got["nine"], []string{"10-31 09:00 EDT", "11-01 09:00 EST"}) // 9:00 local either side: 25 hours apart
			is.Equal(got["one-thirty"], []string{"10-31 01:30 EDT", "11-01 01:30 EDT", "11-02 01:30 EST"})
			is.Equal(got["hourly"][24:27], []string{"11-01 01:00 EDT", "11-01 02:00 EST", "11-01 03:00 EST"}) // 01:00 came once, at its first instant
			is.Equal(len(got["hourly"]), 52)
		})
	})
}
