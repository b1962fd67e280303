package lite_test

import (
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func mustDeclare(tb testing.TB, q *lite.Queue, d lite.Declaration) lite.Declared {
	tb.Helper()
	out, err := q.Declare(tb.Context(), d)
	if err != nil {
		tb.Fatalf("declare: %v", err)
	}
	return out
}

func every(name, spec string) lite.Schedule {
	return lite.Schedule{Name: name, Spec: spec, Job: lite.NewJob{Queue: "q", Kind: name}}
}

// scheduleOwners maps each schedule's name to its owner.
func scheduleOwners(tb testing.TB, q *lite.Queue) map[string]string {
	tb.Helper()
	all, err := q.Schedules(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	out := map[string]string{}
	for _, s := range all {
		out[s.Name] = s.Owner
	}
	return out
}

func queueLimits(tb testing.TB, q *lite.Queue, queue string) (lite.Limits, string) {
	tb.Helper()
	stats, err := q.Stats(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	for _, s := range stats {
		if s.Queue == queue {
			return s.Limits, s.LimitsOwner
		}
	}
	return lite.Limits{}, ""
}

func TestDeclareSchedules(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a schedule the owner no longer declares is removed, another owner's and a hand-set one stay", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly"), every("dunning", "@daily")}})
			mustDeclare(t, q, lite.Declaration{Owner: "reports", Schedules: []lite.Schedule{every("digest", "@daily")}})
			mustSetSchedule(t, q, every("backup", "@daily"))

			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}})
			is.Equal(out.Removed, []string{"schedule dunning"})
			is.Equal(scheduleOwners(t, q), map[string]string{"invoice": "billing", "digest": "reports", "backup": ""})

			out = mustDeclare(t, q, lite.Declaration{Owner: "billing"})
			is.Equal(out.Removed, []string{"schedule invoice"}) // declaring none removes all of the owner's
			is.Equal(scheduleOwners(t, q), map[string]string{"digest": "reports", "backup": ""})
		})

		t.Run("a schedule set by hand is not overwritten unless the declaration forces", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}})
			mustSetSchedule(t, q, every("invoice", "@daily")) // the operator takes it over

			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}})
			is.Equal(out.Held, []string{"schedule invoice"})
			s := mustSchedule(t, q, "invoice")
			is.Equal(s.Spec, "@daily")
			is.Equal(s.Owner, "")

			out = mustDeclare(t, q, lite.Declaration{Owner: "billing"})
			is.Equal(len(out.Removed), 0) // a hand-set schedule is never the owner's to remove
			is.Equal(mustSchedule(t, q, "invoice").Spec, "@daily")

			out = mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}, Force: true})
			is.Equal(out.Written, []string{"schedule invoice"})
			s = mustSchedule(t, q, "invoice")
			is.Equal(s.Spec, "@hourly")
			is.Equal(s.Owner, "billing")
		})

		t.Run("another owner's schedule of the same name is held", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "reports", Schedules: []lite.Schedule{every("nightly", "@daily")}})
			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("nightly", "@hourly")}})
			is.Equal(out.Held, []string{"schedule nightly"})
			is.Equal(mustSchedule(t, q, "nightly").Owner, "reports")
		})

		t.Run("declaring again loses no tick and fires none twice", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.open(t, lite.Options{Now: clock.Now})
			d := lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("tick", "* * * * *")}}
			mustDeclare(t, q, d)
			next := mustSchedule(t, q, "tick").NextRunAt

			clock.Advance(time.Minute) // the first tick is due
			mustDeclare(t, q, d)
			is.Equal(mustSchedule(t, q, "tick").NextRunAt, next) // a re-declaration keeps the due tick
			is.Equal(mustFire(t, q), 1)
			mustDeclare(t, q, d)
			is.Equal(mustFire(t, q), 0) // and does not bring a fired one back
			is.Equal(len(allJobs(t, q)), 1)

			clock.Advance(time.Minute)
			mustDeclare(t, q, d)
			is.Equal(mustFire(t, q), 1)
			is.Equal(len(allJobs(t, q)), 2)
		})

		t.Run("a pause by hand survives a re-declaration", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			d := lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}}
			mustDeclare(t, q, d)
			is.NoErr(q.PauseSchedule(t.Context(), "invoice"))
			mustDeclare(t, q, d)
			s := mustSchedule(t, q, "invoice")
			is.True(s.Paused)
			is.Equal(s.Owner, "billing")
		})

		t.Run("a bad schedule changes nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("invoice", "@hourly")}})
			_, err := q.Declare(t.Context(), lite.Declaration{Owner: "billing", Schedules: []lite.Schedule{every("bad", "@nope")}})
			is.True(errors.Is(err, lite.ErrInvalid))
			is.Equal(scheduleOwners(t, q), map[string]string{"invoice": "billing"})
			_, err = q.Declare(t.Context(), lite.Declaration{Schedules: []lite.Schedule{every("x", "@hourly")}})
			is.True(errors.Is(err, lite.ErrInvalid)) // a declaration needs an owner
		})
	})
}

func TestDeclareRetention(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a state the owner no longer declares goes back to the default, a hand-set one stays", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Retention: lite.Retention{Done: time.Hour, Dead: 48 * time.Hour}})
			is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: time.Hour, Dead: 48 * time.Hour, Cancelled: 2 * time.Hour}))
			owners, err := q.RetentionOwners(t.Context())
			is.NoErr(err)
			// the operator changed cancelled only: the others stay the owner's
			is.Equal(owners, map[lite.State]string{lite.StateDone: "billing", lite.StateDead: "billing", lite.StateCancelled: ""})

			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Retention: lite.Retention{Done: time.Hour, Cancelled: time.Hour}})
			is.Equal(out.Removed, []string{"retention dead"})
			is.Equal(out.Held, []string{"retention cancelled"})
			r, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(r, lite.Retention{Done: time.Hour, Cancelled: 2 * time.Hour, Dead: lite.DefaultRetainDead})
		})

		t.Run("a forced declaration overwrites a hand-set state", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			is.NoErr(q.SetRetention(t.Context(), lite.Retention{Done: 2 * time.Hour}))
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Retention: lite.Retention{Done: time.Hour}, Force: true})
			r, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(r.Done, time.Hour)
			owners, err := q.RetentionOwners(t.Context())
			is.NoErr(err)
			is.Equal(owners, map[lite.State]string{lite.StateDone: "billing"})
		})

		t.Run("a declaration never clears another owner's state", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "reports", Retention: lite.Retention{Dead: time.Hour}})
			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Force: true})
			is.Equal(len(out.Removed), 0)
			r, err := q.Retention(t.Context())
			is.NoErr(err)
			is.Equal(r.Dead, time.Hour)
		})
	})
}

func TestDeclareLimits(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("limits the owner no longer declares are lifted, another owner's and hand-set ones stay", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			five := lite.Limits{MaxRunning: 5}
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": five, "pdf": five}})
			mustDeclare(t, q, lite.Declaration{Owner: "reports", Limits: map[string]lite.Limits{"charts": five}})
			is.NoErr(q.SetLimits(t.Context(), "sms", five))

			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": five}})
			is.Equal(out.Removed, []string{"limits pdf"})
			l, owner := queueLimits(t, q, "pdf")
			is.Equal(l, lite.Limits{})
			is.Equal(owner, "")
			_, owner = queueLimits(t, q, "mail")
			is.Equal(owner, "billing")
			l, owner = queueLimits(t, q, "charts")
			is.Equal(l, five)
			is.Equal(owner, "reports")
			l, owner = queueLimits(t, q, "sms")
			is.Equal(l, five)
			is.Equal(owner, "")
		})

		t.Run("limits set by hand are not overwritten unless the declaration forces", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": {MaxRunning: 5}}})
			is.NoErr(q.SetLimits(t.Context(), "mail", lite.Limits{MaxRunning: 1}))

			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": {MaxRunning: 5}}})
			is.Equal(out.Held, []string{"limits mail"})
			l, owner := queueLimits(t, q, "mail")
			is.Equal(l.MaxRunning, 1)
			is.Equal(owner, "")

			mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": {MaxRunning: 5}}, Force: true})
			l, owner = queueLimits(t, q, "mail")
			is.Equal(l.MaxRunning, 5)
			is.Equal(owner, "billing")
		})

		t.Run("a queue paused by hand with no limits takes the declared ones", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			is.NoErr(q.Pause(t.Context(), "mail"))
			out := mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": {MaxRunning: 5}}})
			is.Equal(out.Written, []string{"limits mail"}) // limits nobody set are nobody's
			l, owner := queueLimits(t, q, "mail")
			is.Equal(l.MaxRunning, 5)
			is.Equal(owner, "billing")
		})

		t.Run("a pause by hand survives the owner lifting its limits", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{Now: newFakeClock().Now})
			mustDeclare(t, q, lite.Declaration{Owner: "billing", Limits: map[string]lite.Limits{"mail": {MaxRunning: 5}}})
			is.NoErr(q.Pause(t.Context(), "mail"))
			mustDeclare(t, q, lite.Declaration{Owner: "billing"})
			stats, err := q.Stats(t.Context())
			is.NoErr(err)
			is.Equal(len(stats), 1)
			is.True(stats[0].Paused)
			is.Equal(stats[0].Limits, lite.Limits{})
		})
	})
}
