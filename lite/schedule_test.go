package lite_test

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// allJobs lists every job of q in id order.
func allJobs(tb testing.TB, q *lite.Queue) []*lite.Job {
	tb.Helper()
	var all []*lite.Job
	var after int64
	for {
		page, err := q.List(tb.Context(), lite.ListFilter{AfterID: after, Limit: 500})
		if err != nil {
			tb.Fatalf("list: %v", err)
		}
		if len(page) == 0 {
			return all
		}
		all = append(all, page...)
		after = page[len(page)-1].ID
	}
}

func mustSetSchedule(tb testing.TB, q *lite.Queue, s lite.Schedule) {
	tb.Helper()
	if err := q.SetSchedule(tb.Context(), s); err != nil {
		tb.Fatalf("set schedule: %v", err)
	}
}

func mustSchedule(tb testing.TB, q *lite.Queue, name string) lite.Schedule {
	tb.Helper()
	all, err := q.Schedules(tb.Context())
	if err != nil {
		tb.Fatalf("schedules: %v", err)
	}
	for _, s := range all {
		if s.Name == name {
			return s
		}
	}
	tb.Fatalf("no schedule %q", name)
	return lite.Schedule{}
}

func mustFire(tb testing.TB, q *lite.Queue) int {
	tb.Helper()
	n, err := q.FireSchedules(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestScheduleFiresEachTickOnceAcrossConnections runs eight firing loops,
// each on a queue of its own (its own connections, as eight processes
// have), all at once at every tick of one fake clock: every tick is
// enqueued by exactly one of them.
func TestScheduleFiresEachTickOnceAcrossConnections(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		// Exclusion, not durability, is under test: commits need not wait
		// for the disk.
		opts := lite.Options{Now: clock.Now, Synchronous: lite.SyncNormal}
		q, dsn := e.open(t, opts)
		mustSetSchedule(t, q, lite.Schedule{Name: "tick", Spec: "* * * * *", Job: lite.NewJob{Queue: "q", Kind: "k"}})
		queues := []*lite.Queue{q}
		for range 7 {
			queues = append(queues, mustOpenOpts(t, dsn, opts))
		}
		const ticks = 1000
		var want []time.Time
		for range ticks {
			clock.Advance(time.Minute)
			want = append(want, clock.Now().Truncate(time.Minute))
			var fired atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for _, q := range queues {
				wg.Go(func() {
					<-start
					n, err := q.FireSchedules(t.Context())
					if err != nil {
						t.Error(err)
					}
					fired.Add(int64(n))
				})
			}
			close(start)
			wg.Wait()
			is.Equal(fired.Load(), int64(1)) // one loop won the tick, the others found it fired
		}
		jobs := allJobs(t, q)
		is.Equal(len(jobs), ticks)
		for i, j := range jobs {
			is.True(j.RunAt.Equal(want[i])) // each job names its own tick, in order
			is.Equal(j.Queue, "q")
			is.Equal(j.Kind, "k")
		}
	})
}

// TestScheduleFireIsACompareAndSet fires a schedule that another process
// fired between this one's read and its write: the stale fire writes
// nothing, and a pause committed in that window stops the fire too.
func TestScheduleFireIsACompareAndSet(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@hourly"})
		clock.Advance(time.Hour)

		t.Run("a tick another process fired is not enqueued again", func(t *testing.T) {
			is := is.New(t)
			n, err := lite.FireAfter(t.Context(), q, func() { is.Equal(mustFire(t, other), 1) })
			is.NoErr(err)
			is.Equal(n, 0)
			is.Equal(len(allJobs(t, q)), 1)
		})
		t.Run("a pause committed after the read stops the fire", func(t *testing.T) {
			is := is.New(t)
			clock.Advance(time.Hour)
			n, err := lite.FireAfter(t.Context(), q, func() { is.NoErr(other.PauseSchedule(t.Context(), "s")) })
			is.NoErr(err)
			is.Equal(n, 0)
			is.Equal(len(allJobs(t, q)), 1)
		})
		t.Run("a tick enqueues the job of a schedule replaced after the read", func(t *testing.T) {
			is := is.New(t)
			mustSetSchedule(t, q, lite.Schedule{Name: "r", Spec: "@hourly", Job: lite.NewJob{Queue: "old", Payload: []byte("v1")}})
			clock.Advance(time.Hour)
			n, err := lite.FireAfter(t.Context(), q, func() {
				mustSetSchedule(t, other, lite.Schedule{Name: "r", Spec: "@hourly", Job: lite.NewJob{Queue: "new", Payload: []byte("v2")}})
			})
			is.NoErr(err)
			is.Equal(n, 1) // the tick is not lost
			jobs := allJobs(t, q)
			is.Equal(len(jobs), 2)
			is.Equal(jobs[1].Queue, "new") // why: the old job must not run once SetSchedule has returned
			is.Equal(string(jobs[1].Payload), "v2")
		})
	})
}

// TestScheduleCatchesUpOnce leaves a schedule unfired for a day of
// missed ticks: the next fire enqueues one job, for the first missed
// tick, and the schedule moves on to its first tick after now.
func TestScheduleCatchesUpOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock() // 03:04:05
		q, _ := e.mustOpen(t, clock)
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@hourly"})
		first := mustSchedule(t, q, "s").NextRunAt
		is.True(first.Equal(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)))

		clock.Advance(24*time.Hour + 30*time.Minute) // 25 ticks missed
		is.Equal(mustFire(t, q), 1)
		is.Equal(mustFire(t, q), 0) // nothing more is due
		jobs := allJobs(t, q)
		is.Equal(len(jobs), 1)
		is.True(jobs[0].RunAt.Equal(first))
		s := mustSchedule(t, q, "s")
		is.True(s.LastRunAt.Equal(first))
		is.True(s.NextRunAt.Equal(time.Date(2026, 1, 3, 4, 0, 0, 0, time.UTC)))
	})
}

// TestScheduleEveryKeepsItsPhase fires an @every schedule late: the ticks
// after a late fire keep the spacing from when it was set.
func TestScheduleEveryKeepsItsPhase(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock() // 03:04:05
		q, _ := e.mustOpen(t, clock)
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@every 10m"})
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(time.Date(2026, 1, 2, 3, 14, 5, 0, time.UTC)))
		clock.Advance(37 * time.Minute) // 03:41:05: three ticks missed
		is.Equal(mustFire(t, q), 1)
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(time.Date(2026, 1, 2, 3, 44, 5, 0, time.UTC)))
	})
}

// TestSchedulePauseAndResume pauses a schedule for hours: it fires
// nothing while paused, and once resumed it waits for its first tick
// after now, with no burst and no catch-up of the paused ticks.
func TestSchedulePauseAndResume(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@hourly"})
		is.NoErr(q.PauseSchedule(ctx, "s"))
		is.NoErr(q.PauseSchedule(ctx, "s")) // pausing twice changes nothing
		is.True(mustSchedule(t, q, "s").Paused)
		for range 5 {
			clock.Advance(time.Hour)
			is.Equal(mustFire(t, q), 0)
		}
		is.Equal(len(allJobs(t, q)), 0)

		// Registering it again, as a program does at every start, keeps
		// the operator's pause.
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@hourly"})
		is.True(mustSchedule(t, q, "s").Paused)

		is.NoErr(q.ResumeSchedule(ctx, "s"))
		s := mustSchedule(t, q, "s")
		is.True(!s.Paused)
		is.True(s.NextRunAt.Equal(time.Date(2026, 1, 2, 9, 0, 0, 0, time.UTC))) // now is 08:04:05
		is.Equal(mustFire(t, q), 0)
		clock.Advance(time.Hour)
		is.Equal(mustFire(t, q), 1)
		is.Equal(len(allJobs(t, q)), 1)
		is.NoErr(q.ResumeSchedule(ctx, "s")) // resuming a running schedule changes nothing
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)))
	})
}

// TestSetScheduleIsAnUpsert registers a schedule again: the same spec
// keeps its next run, a new job is taken as it is, and a new spec or
// zone starts the ticks over.
func TestSetScheduleIsAnUpsert(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock() // 03:04:05
		q, _ := e.mustOpen(t, clock)
		s := lite.Schedule{Name: "s", Spec: "@every 1h", Job: lite.NewJob{Queue: "a", Kind: "k", Payload: []byte("1")}}
		mustSetSchedule(t, q, s)
		next := mustSchedule(t, q, "s").NextRunAt
		clock.Advance(20 * time.Minute)
		s.Job = lite.NewJob{Queue: "b", Kind: "k2", Payload: []byte("2"), Priority: 3, MaxAttempts: 2}
		mustSetSchedule(t, q, s)
		got := mustSchedule(t, q, "s")
		is.True(got.NextRunAt.Equal(next)) // same spec: same ticks
		is.Equal(got.Job, lite.NewJob{Queue: "b", Kind: "k2", Payload: []byte("2"), Priority: 3, MaxAttempts: 2})

		s.TimeZone = "Europe/Berlin"
		mustSetSchedule(t, q, s)
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(clock.Now().Add(time.Hour))) // a new zone starts over
		s.Spec = "0 12 * * *"
		mustSetSchedule(t, q, s)
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(time.Date(2026, 1, 2, 11, 0, 0, 0, time.UTC))) // noon in Berlin

		clock.Advance(8 * time.Hour)
		is.Equal(mustFire(t, q), 1)
		jobs := allJobs(t, q)
		is.Equal(len(jobs), 1)
		is.Equal(jobs[0].Queue, "b")
		is.Equal(jobs[0].Kind, "k2")
		is.Equal(string(jobs[0].Payload), "2")
		is.Equal(jobs[0].Priority, 3)
		is.Equal(jobs[0].MaxAttempts, 2)
	})
}

// TestSetScheduleRefusesBadInput gives bad names, specs, zones and jobs:
// each is a clear error, and the schedule stored before stays as it was.
func TestSetScheduleRefusesBadInput(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		good := lite.Schedule{Name: "s", Spec: "@daily", Job: lite.NewJob{Queue: "q"}}
		mustSetSchedule(t, q, good)
		before := mustSchedule(t, q, "s")
		for _, c := range []struct {
			name string
			s    lite.Schedule
			want string
		}{
			{"an empty name", lite.Schedule{Spec: "@daily"}, "set schedule: the name is empty"},
			{"a name with a control character", lite.Schedule{Name: "s\x1b", Spec: "@daily"}, "contains a control character"},
			{"a spec with control characters", lite.Schedule{Name: "s", Spec: "*/5\t* * * *\r"}, `spec "*/5\t* * * *\r" contains a control character`},
			{"six fields", lite.Schedule{Name: "s", Spec: "0 0 0 * * *"}, `spec "0 0 0 * * *": expected exactly 5 fields`},
			{"a minute out of range", lite.Schedule{Name: "s", Spec: "61 * * * *"}, `spec "61 * * * *"`},
			{"an unknown descriptor", lite.Schedule{Name: "s", Spec: "@fortnightly"}, `spec "@fortnightly"`},
			{"an empty spec", lite.Schedule{Name: "s"}, `spec ""`},
			{"an @every under a second", lite.Schedule{Name: "s", Spec: "@every 100ms"}, `spec "@every 100ms": @every takes whole seconds, at least one`},
			{"an @every with a fraction of a second", lite.Schedule{Name: "s", Spec: "@every 1.5s"}, "@every takes whole seconds"},
			{"a zone in the spec", lite.Schedule{Name: "s", Spec: "CRON_TZ=Asia/Tokyo 0 0 * * *"}, "give the time zone as the schedule's zone"},
			{"an unknown zone", lite.Schedule{Name: "s", Spec: "@daily", TimeZone: "Mars/Olympus"}, `time zone "Mars/Olympus"`},
			{"the host's zone", lite.Schedule{Name: "s", Spec: "@daily", TimeZone: "Local"}, `time zone "Local" differs from host to host`},
			{"a date that never comes", lite.Schedule{Name: "s", Spec: "0 0 30 2 *"}, "has no tick after"},
			{"a job with a run time", lite.Schedule{Name: "s", Spec: "@daily", Job: lite.NewJob{Delay: time.Hour}}, "RunAt and Delay must be zero"},
			{"a kind with a control character", lite.Schedule{Name: "s", Spec: "@daily", Job: lite.NewJob{Kind: "a\nb"}}, "contains a control character"},
			{"negative max attempts", lite.Schedule{Name: "s", Spec: "@daily", Job: lite.NewJob{MaxAttempts: -1}}, "negative max attempts"},
		} {
			t.Run(c.name+" is refused", func(t *testing.T) {
				is := is.New(t)
				err := q.SetSchedule(t.Context(), c.s)
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), c.want)) // the error says what is wrong
				all, err := q.Schedules(t.Context())
				is.NoErr(err)
				is.Equal(all, []lite.Schedule{before}) // nothing stored changed
			})
		}
	})
}

// TestScheduleUnknownName gives ErrNoSchedule for every change of a
// schedule that is not there.
func TestScheduleUnknownName(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ctx := t.Context()
		q, _ := e.mustOpen(t, newFakeClock())
		is.True(errors.Is(q.RemoveSchedule(ctx, "nope"), lite.ErrNoSchedule))
		is.True(errors.Is(q.PauseSchedule(ctx, "nope"), lite.ErrNoSchedule))
		is.True(errors.Is(q.ResumeSchedule(ctx, "nope"), lite.ErrNoSchedule))
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@daily"})
		is.NoErr(q.RemoveSchedule(ctx, "s"))
		is.True(errors.Is(q.RemoveSchedule(ctx, "s"), lite.ErrNoSchedule))
		all, err := q.Schedules(ctx)
		is.NoErr(err)
		is.Equal(len(all), 0)
	})
}

// TestScheduleJSON writes a schedule as `lite schedule ls --json` prints
// it and reads it back.
func TestScheduleJSON(t *testing.T) {
	is := is.New(t)
	berlin, err := time.LoadLocation("Europe/Berlin")
	is.NoErr(err)
	s := lite.Schedule{Name: "nightly", Spec: "0 3 * * *", TimeZone: "Europe/Berlin",
		Job:       lite.NewJob{Queue: "q", Kind: "report", Payload: []byte(`{"a":1}`), Priority: 2, MaxAttempts: 3},
		NextRunAt: time.Date(2026, 1, 3, 3, 0, 0, 0, berlin), Owner: "billing-app"}
	b, err := json.Marshal(s)
	is.NoErr(err)
	is.Equal(string(b), `{"name":"nightly","spec":"0 3 * * *","time_zone":"Europe/Berlin","queue":"q","kind":"report",`+
		`"payload":"{\"a\":1}","priority":2,"max_attempts":3,"paused":false,"next_run_at":"2026-01-03T02:00:00Z","owner":"billing-app"}`) // UTC, no last run yet
	var back lite.Schedule
	is.NoErr(json.Unmarshal(b, &back))
	s.NextRunAt = s.NextRunAt.UTC()
	is.Equal(back, s)

	s.Job.Payload = []byte{0xff}
	b, err = json.Marshal(s)
	is.NoErr(err)
	is.True(strings.Contains(string(b), `"payload_base64":"/w=="`)) // bytes that are not UTF-8 go as base64
}

// TestAScheduleThatCannotFireKeepsNoOtherFromFiring stores a schedule in
// a zone this host cannot load (as a host without a time zone database
// would find a good one): firing reports it, and the other schedules fire.
func TestAScheduleThatCannotFireKeepsNoOtherFromFiring(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		mustSetSchedule(t, q, lite.Schedule{Name: "a", Spec: "@hourly", Job: lite.NewJob{Kind: "a"}})
		mustSetSchedule(t, q, lite.Schedule{Name: "b", Spec: "@hourly", Job: lite.NewJob{Kind: "b"}})
		_, err := q.DB().ExecContext(t.Context(), `update lite_schedules set time_zone = 'Mars/Olympus' where name = 'a'`)
		is.NoErr(err)
		clock.Advance(time.Hour)
		n, err := q.FireSchedules(t.Context())
		is.True(err != nil)
		is.True(strings.Contains(err.Error(), `schedule a: time zone "Mars/Olympus"`)) // names the schedule and why
		is.Equal(n, 1)
		jobs := allJobs(t, q)
		is.Equal(len(jobs), 1)
		is.Equal(jobs[0].Kind, "b")
	})
}

// TestAScheduleAheadOfAClockSteppedBackComesBackToItsNextTick fires two
// schedules with a clock two hours fast, then sets the clock right: each
// comes back to its next tick from now, enqueueing nothing for the
// change, and fires there.
func TestAScheduleAheadOfAClockSteppedBackComesBackToItsNextTick(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock() // 03:04:05
		q, _ := e.mustOpen(t, clock)
		clock.Advance(2 * time.Hour)
		mustSetSchedule(t, q, lite.Schedule{Name: "cron", Spec: "* * * * *"})
		mustSetSchedule(t, q, lite.Schedule{Name: "every", Spec: "@every 10s"})
		clock.Advance(time.Minute)
		is.Equal(mustFire(t, q), 2)

		clock.Advance(-2 * time.Hour) // 03:05:05
		is.Equal(mustFire(t, q), 0)
		is.Equal(len(allJobs(t, q)), 2) // bringing them back enqueues nothing
		is.True(mustSchedule(t, q, "cron").NextRunAt.Equal(time.Date(2026, 1, 2, 3, 6, 0, 0, time.UTC)))
		is.True(mustSchedule(t, q, "every").NextRunAt.Equal(time.Date(2026, 1, 2, 3, 5, 15, 0, time.UTC)))
		clock.Advance(55 * time.Second)
		is.Equal(mustFire(t, q), 2) // why: each fires at its next tick, not two hours later
	})
}

// Two processes never read one clock exactly alike (on PostgreSQL each
// syncs to the server's): one a few milliseconds behind the one that
// fired a tick must not take the fire for a clock stepped back and fire
// the tick again.
func TestAClockAMomentBehindNeverFiresATickAgain(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		ahead := newFakeClock()
		qa, dsn := e.open(t, lite.Options{Now: ahead.Now})
		behind := newFakeClock()
		qb := mustOpenOpts(t, dsn, lite.Options{Now: behind.Now})
		mustSetSchedule(t, qa, lite.Schedule{Name: "s", Spec: "@every 1s", Job: lite.NewJob{Kind: "k"}})
		tick := mustSchedule(t, qa, "s").NextRunAt
		ahead.Advance(tick.Sub(ahead.Now()) + 5*time.Millisecond)
		behind.Advance(tick.Sub(behind.Now()) - 5*time.Millisecond)
		is.Equal(mustFire(t, qa), 1)
		is.Equal(mustFire(t, qb), 0) // its clock has not reached the tick
		behind.Advance(10 * time.Millisecond)
		is.Equal(mustFire(t, qb), 0) // the tick was fired, once
		var n int
		is.NoErr(qa.DB().QueryRowContext(t.Context(), "select count(*) from lite_jobs").Scan(&n))
		is.Equal(n, 1)
	})
}

// TestATickFiresOnceWhenTheClockStepsBackBeforeItsFire reads a tick as
// due 1 ms after it, then steps the clock back 2 ms, to before the tick,
// before the fire reads it (a fire reads the clock once it holds the
// schedule's row; on PostgreSQL a process's reading of the server's clock
// steps by milliseconds, either way, at each resync): the fire still moves
// the schedule past the tick it enqueued, and that tick fires once.
func TestATickFiresOnceWhenTheClockStepsBackBeforeItsFire(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, spec := range []string{"@every 1s", "* * * * *"} {
			t.Run("a schedule "+spec, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: spec})
				tick := mustSchedule(t, q, "s").NextRunAt
				clock.Set(tick.Add(time.Millisecond))
				n, err := lite.FireAfter(t.Context(), q, func() { clock.Advance(-2 * time.Millisecond) })
				is.NoErr(err)
				is.Equal(n, 1)
				is.True(mustSchedule(t, q, "s").NextRunAt.After(tick)) // why: left at the tick it enqueued, it fires it again
				clock.Advance(2 * time.Millisecond)
				is.Equal(mustFire(t, q), 0)
				is.Equal(len(allJobs(t, q)), 1)
			})
		}
	})
}

// TestAFireThatWaitedTakesNoTickFiredMeanwhileForAClockSteppedBack reads
// a tick as due, then, before its fire, lets another process fire that
// tick and the two after it (a fire that waited for the row another held,
// on a loaded host): the ticks fired meanwhile are not taken for a clock
// stepped back, and none of them fires again.
func TestAFireThatWaitedTakesNoTickFiredMeanwhileForAClockSteppedBack(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, dsn := e.mustOpen(t, clock)
		other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@every 1s"})
		tick := mustSchedule(t, q, "s").NextRunAt
		clock.Set(tick.Add(time.Millisecond))
		n, err := lite.FireAfter(t.Context(), q, func() {
			for range 3 {
				is.Equal(mustFire(t, other), 1)
				clock.Advance(time.Second)
			}
		})
		is.NoErr(err)
		// The other process fired the tick, and two more since.
		is.Equal(n, 0)
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(tick.Add(3 * time.Second))) // why: brought back, it fires the ticks between again
		is.Equal(mustFire(t, q), 1)
		jobs := allJobs(t, q)
		is.Equal(len(jobs), 4)
		for i, j := range jobs {
			is.True(j.RunAt.Equal(tick.Add(time.Duration(i) * time.Second))) // one job a tick
		}
	})
}

// TestARewindReadsTheClockOnceItsWriteHoldsItsLock finds a schedule as
// one a clock stepped back left ahead, with a clock read before another
// process fired three ticks (a read that waited on a loaded host), then
// reads the clock for the rewind's write, 5 ms behind the one that fired
// them: within clockSkew, the fires are not taken for a step back and no
// tick fires again.
func TestARewindReadsTheClockOnceItsWriteHoldsItsLock(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		var behind, staleOnce atomic.Int64 // how far q's clock reads behind the other's, always and on its next read
		now := func() time.Time { return clock.Now().Add(-time.Duration(behind.Load() + staleOnce.Swap(0))) }
		q, dsn := e.open(t, lite.Options{Now: now})
		other := mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})
		mustSetSchedule(t, q, lite.Schedule{Name: "s", Spec: "@every 1s"})
		tick := mustSchedule(t, q, "s").NextRunAt
		clock.Set(tick.Add(time.Millisecond))
		n, err := lite.FireAfter(t.Context(), q, func() {
			for i := range 3 {
				if i > 0 {
					clock.Advance(time.Second)
				}
				is.Equal(mustFire(t, other), 1)
			}
			behind.Store(int64(5 * time.Millisecond))
			staleOnce.Store(int64(3 * time.Second))
		})
		is.NoErr(err)
		// The other process fired the tick, and two more since.
		is.Equal(n, 0)
		is.True(mustSchedule(t, q, "s").NextRunAt.Equal(tick.Add(3 * time.Second))) // why: brought back, it fires a tick again
		clock.Advance(time.Second + 10*time.Millisecond)
		is.Equal(mustFire(t, q), 1)
		jobs := allJobs(t, q)
		is.Equal(len(jobs), 4)
		for i, j := range jobs {
			is.True(j.RunAt.Equal(tick.Add(time.Duration(i) * time.Second))) // one job a tick
		}
	})
}
