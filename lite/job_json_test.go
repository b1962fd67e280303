package lite_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// cet is a zone away from UTC, so the golden forms show that times are
// written in UTC whatever zone a Job's times are in.
var cet = time.FixedZone("CET", 3600)

// at is 2026-01-02 04:04:05 CET plus ms milliseconds: 03:04:05 UTC.
func at(ms int) time.Time {
	return time.Date(2026, 1, 2, 4, 4, 5, ms*int(time.Millisecond), cet)
}

// indented is v as json.MarshalIndent writes it, the way the CLI prints.
func indented(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	return string(b)
}

// inUTC is j with every time in UTC, as UnmarshalJSON gives them.
func inUTC(j lite.Job) lite.Job {
	for _, t := range []*time.Time{&j.RunAt, &j.LeasedAt, &j.HeartbeatAt, &j.CreatedAt, &j.FinishedAt} {
		*t = t.UTC()
	}
	errs := make([]lite.AttemptError, len(j.Errors))
	for i, e := range j.Errors {
		e.At = e.At.UTC()
		errs[i] = e
	}
	if j.Errors != nil {
		j.Errors = errs
	}
	return j
}

// roundTrip decodes j's JSON form into a fresh Job.
func roundTrip(tb testing.TB, j lite.Job) lite.Job {
	tb.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		tb.Fatalf("marshal: %v", err)
	}
	var back lite.Job
	if err := json.Unmarshal(b, &back); err != nil {
		tb.Fatalf("unmarshal %s: %v", b, err)
	}
	return back
}

func TestJobJSON(t *testing.T) {
	waiting := lite.Job{
		ID: 1, Queue: "mail", Kind: "welcome", Payload: []byte(`{"to":"ada"}`), Priority: 2,
		State: lite.StateAvailable, RunAt: at(0), MaxAttempts: 10, CreatedAt: at(0),
	}
	binary := lite.Job{
		ID: 2, Queue: "img", Kind: "resize", Payload: []byte{0xff, 0x00, 0x01}, State: lite.StateDone,
		RunAt: at(0), Attempts: 1, MaxAttempts: 3, Generation: 1,
		LeaseToken: "5f0c2b7e-8c1d-4d8e-9a57-2b1f3e6d4c21", LockedBy: "host:42:ab12cd34",
		LeasedAt: at(100), HeartbeatAt: at(150), UniqueKey: "img-7", Result: []byte{0x89, 'P', 'N', 'G'},
		CreatedAt: at(0), FinishedAt: at(250),
	}
	dead := lite.Job{
		ID: 3, Queue: "mail", Kind: "welcome", Payload: []byte("héllo\n"), State: lite.StateDead,
		RunAt: at(1000), Attempts: 2, MaxAttempts: 2, Generation: 2,
		LeaseToken: "0d9e1c3a-7b6f-4e2d-8c5b-a4f3e2d1c0b9", LockedBy: "host:42:ab12cd34",
		LeasedAt: at(1000), HeartbeatAt: at(1000),
		Errors: []lite.AttemptError{
			{Attempt: 1, Generation: 1, At: at(500), Error: "smtp timeout"},
			{Attempt: 2, Generation: 2, At: at(1500), Error: "smtp refused"},
		},
		CreatedAt: at(0), FinishedAt: at(1500),
	}

	t.Run("a waiting job with a text payload has no lease fields and an empty errors array", func(t *testing.T) {
		is := is.New(t)
		is.Equal(indented(t, waiting), `{
  "id": 1,
  "queue": "mail",
  "kind": "welcome",
  "state": "available",
  "priority": 2,
  "payload": "{\"to\":\"ada\"}",
  "run_at": "2026-01-02T03:04:05Z",
  "attempts": 0,
  "max_attempts": 10,
  "generation": 0,
  "errors": [],
  "created_at": "2026-01-02T03:04:05Z"
}`)
	})

	t.Run("binary payload and result are base64 in their own fields", func(t *testing.T) {
		is := is.New(t)
		is.Equal(indented(t, binary), `{
  "id": 2,
  "queue": "img",
  "kind": "resize",
  "state": "done",
  "priority": 0,
  "payload_base64": "/wAB",
  "run_at": "2026-01-02T03:04:05Z",
  "attempts": 1,
  "max_attempts": 3,
  "generation": 1,
  "lease_token": "5f0c2b7e-8c1d-4d8e-9a57-2b1f3e6d4c21",
  "locked_by": "host:42:ab12cd34",
  "leased_at": "2026-01-02T03:04:05.1Z",
  "heartbeat_at": "2026-01-02T03:04:05.15Z",
  "unique_key": "img-7",
  "result_base64": "iVBORw==",
  "errors": [],
  "created_at": "2026-01-02T03:04:05Z",
  "finished_at": "2026-01-02T03:04:05.25Z"
}`)
	})

	t.Run("a dead job lists each attempt's error with its generation", func(t *testing.T) {
		is := is.New(t)
		is.Equal(indented(t, dead), `{
  "id": 3,
  "queue": "mail",
  "kind": "welcome",
  "state": "dead",
  "priority": 0,
  "payload": "héllo\n",
  "run_at": "2026-01-02T03:04:06Z",
  "attempts": 2,
  "max_attempts": 2,
  "generation": 2,
  "lease_token": "0d9e1c3a-7b6f-4e2d-8c5b-a4f3e2d1c0b9",
  "locked_by": "host:42:ab12cd34",
  "leased_at": "2026-01-02T03:04:06Z",
  "heartbeat_at": "2026-01-02T03:04:06Z",
  "errors": [
    {
      "attempt": 1,
      "generation": 1,
      "at": "2026-01-02T03:04:05.5Z",
      "error": "smtp timeout"
    },
    {
      "attempt": 2,
      "generation": 2,
      "at": "2026-01-02T03:04:06.5Z",
      "error": "smtp refused"
    }
  ],
  "created_at": "2026-01-02T03:04:05Z",
  "finished_at": "2026-01-02T03:04:06.5Z"
}`)
	})

	t.Run("a job and a pointer to it marshal alike", func(t *testing.T) {
		is := is.New(t)
		is.Equal(indented(t, &dead), indented(t, dead))
		is.Equal(indented(t, []*lite.Job{&waiting}), "[\n  "+
			string(bytes.ReplaceAll([]byte(indented(t, waiting)), []byte("\n"), []byte("\n  ")))+"\n]")
	})

	t.Run("every shape reads back as the job it was, with times in UTC", func(t *testing.T) {
		is := is.New(t)
		for _, j := range []lite.Job{waiting, binary, dead} {
			is.Equal(roundTrip(t, j), inUTC(j))
		}
	})

	t.Run("an empty payload and no result stay apart", func(t *testing.T) {
		is := is.New(t)
		j := waiting
		j.Payload = []byte{}
		back := roundTrip(t, j)
		is.True(back.Payload != nil) // present and empty
		is.Equal(len(back.Payload), 0)
		is.True(back.Result == nil) // absent
	})

	t.Run("a payload given both as text and as base64 is refused", func(t *testing.T) {
		is := is.New(t)
		var j lite.Job
		err := json.Unmarshal([]byte(`{"id":1,"payload":"a","payload_base64":"YQ=="}`), &j)
		is.True(err != nil)
		is.Equal(err.Error(), "job: both payload and payload_base64 are set")
	})
}

func TestJobJSONOfAStoredJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Payload: []byte{0xfe}, UniqueKey: "k", MaxAttempts: 3})
		a := mustLeaseOne(t, q, "q")
		is.NoErr(q.AckFailed(ctx, a.Lease(), errors.New("first")))
		clock.Advance(time.Hour)
		b := mustLeaseOne(t, q, "q")
		is.NoErr(q.AckDone(ctx, b.Lease(), []byte("ok")))

		j := mustGet(t, q, id)
		is.Equal(roundTrip(t, *j), inUTC(*j)) // every field the queue fills survives
		var fields map[string]any
		out, err := json.Marshal(j)
		is.NoErr(err)
		is.NoErr(json.Unmarshal(out, &fields))
		is.Equal(fields["payload_base64"], "/g==")
		is.Equal(fields["result"], "ok")
		is.Equal(fields["finished_at"], "2026-01-02T04:04:05Z") // the fake clock's hour later, in UTC
	})
}

func TestQueueStatsJSON(t *testing.T) {
	s := lite.QueueStats{
		Queue:       "mail",
		Counts:      map[lite.State]int64{lite.StateAvailable: 3, lite.StateDone: 5},
		OldestReady: 90*time.Second + 1500*time.Microsecond,
		Sleeping:    2, // of the available
	}

	t.Run("counts name every state and the wait is in whole milliseconds", func(t *testing.T) {
		is := is.New(t)
		is.Equal(indented(t, s), `{
  "queue": "mail",
  "counts": {
    "available": 3,
    "blocked": 0,
    "cancelled": 0,
    "dead": 0,
    "done": 5,
    "running": 0
  },
  "oldest_ready_ms": 90001,
  "sleeping": 2,
  "awaiting": 0,
  "paused": false
}`)
	})

	t.Run("pause and limits are written, and a limit that is not set is left out", func(t *testing.T) {
		is := is.New(t)
		limited := s
		limited.Paused, limited.Limits = true, lite.Limits{Rate: 50, Per: time.Second}
		var fields map[string]any
		is.NoErr(json.Unmarshal([]byte(indented(t, limited)), &fields))
		is.Equal(fields["paused"], true)
		is.Equal(fields["rate"], 50.0)
		is.Equal(fields["rate_per_ms"], 1000.0)
		_, ok := fields["max_running"]
		is.True(!ok) // why: zero is no limit, and reads better absent
		var back lite.QueueStats
		is.NoErr(json.Unmarshal([]byte(indented(t, limited)), &back))
		is.Equal(back.Paused, true)
		is.Equal(back.Limits, limited.Limits)
	})

	t.Run("stats read back as they were, to the millisecond", func(t *testing.T) {
		is := is.New(t)
		b, err := json.Marshal([]lite.QueueStats{s})
		is.NoErr(err)
		var back []lite.QueueStats
		is.NoErr(json.Unmarshal(b, &back))
		// why: the zero counts written for every state are not read back
		// as entries, so the map is the one Stats would give.
		is.Equal(back, []lite.QueueStats{{
			Queue:       "mail",
			Counts:      map[lite.State]int64{lite.StateAvailable: 3, lite.StateDone: 5},
			OldestReady: 90001 * time.Millisecond,
			Sleeping:    2,
		}})
	})

	t.Run("a queue's stats survive the round trip as Stats returns them", func(t *testing.T) {
		forEachEngine(t, func(t *testing.T, e testEngine) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			mustLeaseOne(t, q, "q")
			clock.Advance(2 * time.Second)
			stats, err := q.Stats(t.Context())
			is.NoErr(err)
			b, err := json.Marshal(stats)
			is.NoErr(err)
			var back []lite.QueueStats
			is.NoErr(json.Unmarshal(b, &back))
			is.Equal(back, stats)
			is.Equal(back[0].OldestReady, 2*time.Second)
		})
	})
}
