package lite_test

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func countJobs(t *testing.T, q *lite.Queue) int {
	t.Helper()
	var n int
	if err := q.DB().QueryRowContext(t.Context(), `select count(*) from lite_jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEnqueue(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a job is stored with its fields and defaults", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Payload: []byte("hello")})
			j := mustGet(t, q, id)
			is.Equal(j.Queue, lite.DefaultQueue)
			is.Equal(j.Kind, lite.DefaultKind)
			is.Equal(string(j.Payload), "hello")
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.MaxAttempts, lite.DefaultMaxAttempts)
			is.Equal(j.Generation, int64(0))
			is.Equal(j.RunAt, clock.Now().Local())
			is.Equal(j.CreatedAt, clock.Now().Local())
		})

		t.Run("an empty payload is stored as empty, not null", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			id := mustEnqueue(t, q, lite.NewJob{})
			is.Equal(len(mustGet(t, q, id).Payload), 0)
		})

		t.Run("higher priority leases first, then earlier run_at, then lower id", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			low := mustEnqueue(t, q, lite.NewJob{Queue: "q", Priority: 1})
			high := mustEnqueue(t, q, lite.NewJob{Queue: "q", Priority: 5})
			early := mustEnqueue(t, q, lite.NewJob{Queue: "q", Priority: 1, RunAt: clock.Now().Add(-time.Minute)})
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 10})
			is.NoErr(err)
			is.Equal([]int64{jobs[0].ID, jobs[1].ID, jobs[2].ID}, []int64{high, early, low})
		})

		t.Run("priorities at the ends of int lease in order", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			for _, p := range []int{math.MaxInt, -2, 5, math.MinInt, 0} {
				mustEnqueue(t, q, lite.NewJob{Queue: "q", Priority: p})
			}
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 10})
			is.NoErr(err)
			var got []int
			for _, j := range jobs {
				got = append(got, j.Priority)
			}
			is.Equal(got, []int{math.MaxInt, 5, 0, -2, math.MinInt}) // no subtraction overflows
		})

		t.Run("a delayed job is not leased before its time", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", Delay: time.Minute})
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
			clock.Advance(time.Minute)
			is.Equal(mustLeaseOne(t, q, "q").ID, id)
		})

		t.Run("a duplicate unique key returns the holder's id and ErrDuplicate until it finishes", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			first := mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: "k"})
			id, err := q.Enqueue(ctx, lite.NewJob{Queue: "q", UniqueKey: "k"})
			is.True(errors.Is(err, lite.ErrDuplicate))
			is.Equal(id, first)
			other := mustEnqueue(t, q, lite.NewJob{Queue: "other", UniqueKey: "k"}) // keys are per queue
			is.True(other != first)

			j := mustLeaseOne(t, q, "q")
			_, err = q.Enqueue(ctx, lite.NewJob{Queue: "q", UniqueKey: "k"})
			is.True(errors.Is(err, lite.ErrDuplicate)) // running still holds the key
			is.NoErr(q.AckDone(ctx, j.Lease(), nil))
			again := mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: "k"})
			is.True(again > first)
		})

		t.Run("bad input is refused and stores nothing", func(t *testing.T) {
			clock := newFakeClock()
			for name, j := range map[string]lite.NewJob{
				"negative delay":         {Delay: -time.Second},
				"both RunAt and Delay":   {Delay: time.Second, RunAt: clock.Now()},
				"negative max attempts":  {MaxAttempts: -1},
				"payload over the limit": {Payload: bytes.Repeat([]byte("x"), lite.DefaultMaxPayloadBytes+1)},
				"RunAt after year 9999":  {RunAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
				"RunAt in year 1e6":      {RunAt: time.Date(1_000_000, 1, 1, 0, 0, 0, 0, time.UTC)},
				"RunAt past int64 ms":    {RunAt: time.Date(300_000_000, 1, 1, 0, 0, 0, 0, time.UTC)},
				"RunAt before 1970":      {RunAt: time.Date(1969, 12, 31, 23, 59, 59, 0, time.UTC)},
				"RunAt far in the past":  {RunAt: time.Date(-300_000_000, 1, 1, 0, 0, 0, 0, time.UTC)},
			} {
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					q, _ := e.mustOpen(t, clock)
					_, err := q.Enqueue(t.Context(), j)
					is.True(err != nil)
					_, err = q.EnqueueBatch(t.Context(), []lite.NewJob{{}, j})
					is.True(err != nil)
					tx, err := q.DB().BeginTx(t.Context(), nil)
					is.NoErr(err)
					_, err = q.EnqueueBatchTx(t.Context(), tx, []lite.NewJob{{}, j})
					is.True(err != nil)
					is.NoErr(tx.Commit()) // the valid job before the bad one was never written
					is.Equal(countJobs(t, q), 0)
				})
			}
		})

		t.Run("a queue or kind with a NUL or another control character is refused and stores nothing", func(t *testing.T) {
			// why: a worker hands queue and kind to its command's environment,
			// where a NUL fails every attempt; escapes would reach a terminal.
			for name, j := range map[string]lite.NewJob{
				"a NUL in a queue":         {Queue: "mail\x00"},
				"a NUL in a kind":          {Kind: "send\x00now"},
				"an escape in a kind":      {Kind: "evil\x1b[2J"},
				"a newline in a queue":     {Queue: "a\nb"},
				"a C1 control in a kind":   {Kind: "k\u009b31m"},
				"DEL at the end of a kind": {Kind: "k\x7f"},
			} {
				t.Run(name, func(t *testing.T) {
					is := is.New(t)
					q, _ := e.mustOpen(t, nil)
					_, err := q.Enqueue(t.Context(), j)
					is.True(err != nil)
					is.True(strings.Contains(err.Error(), "contains a control character"))
					_, err = q.EnqueueBatch(t.Context(), []lite.NewJob{{}, j})
					is.True(err != nil)
					tx, err := q.DB().BeginTx(t.Context(), nil)
					is.NoErr(err)
					_, err = q.EnqueueTx(t.Context(), tx, j)
					is.True(err != nil)
					is.NoErr(tx.Commit())
					is.Equal(countJobs(t, q), 0)
				})
			}
		})

		t.Run("a queue in any script, and a kind with spaces or symbols too, is kept as it is", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			id := mustEnqueue(t, q, lite.NewJob{Queue: "邮件.müll", Kind: "send → ✉️ 👩‍💻"})
			j := mustGet(t, q, id)
			is.Equal(j.Queue, "邮件.müll")
			is.Equal(j.Kind, "send → ✉️ 👩‍💻")
		})

		t.Run("run times at the ends of the range are kept exactly", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			first, last := time.Unix(0, 0), time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
			for _, at := range []time.Time{first, last} {
				id := mustEnqueue(t, q, lite.NewJob{RunAt: at})
				is.True(mustGet(t, q, id).RunAt.Equal(at))
			}
			_, err := q.Enqueue(t.Context(), lite.NewJob{RunAt: last.Add(time.Millisecond)})
			is.True(err != nil)
			is.Equal(err.Error(), "enqueue default: run time 10000-01-01T00:00:00Z is outside 1970-01-01 to 9999-12-31")
		})

		t.Run("an oversized payload says so", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.open(t, lite.Options{MaxPayloadBytes: 10})
			_, err := q.Enqueue(t.Context(), lite.NewJob{Payload: make([]byte, 11)})
			is.True(errors.Is(err, lite.ErrTooLarge))
			is.Equal(err.Error(), "enqueue default: payload of 11 bytes: too large (limit 10)")
		})
	})
}

// mustBegin begins a transaction on the queue's DB, for the app's rows
// and EnqueueTx, and rolls it back at the end of the test if it is open.
func mustBegin(tb testing.TB, q *lite.Queue) *sql.Tx {
	tb.Helper()
	tx, err := q.DB().BeginTx(tb.Context(), nil)
	if err != nil {
		tb.Fatalf("begin: %v", err)
	}
	tb.Cleanup(func() { tx.Rollback() })
	return tx
}

// withOrders makes the app's own table in the queue's file.
func withOrders(tb testing.TB, q *lite.Queue) {
	tb.Helper()
	if _, err := q.DB().ExecContext(tb.Context(), `create table orders (id integer primary key)`); err != nil {
		tb.Fatal(err)
	}
}

func countOrders(tb testing.TB, q *lite.Queue) int {
	tb.Helper()
	var n int
	if err := q.DB().QueryRowContext(tb.Context(), `select count(*) from orders`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// kinds lists the kinds of every job in id order.
func kinds(tb testing.TB, q *lite.Queue) []string {
	tb.Helper()
	jobs, err := q.List(tb.Context(), lite.ListFilter{})
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, j := range jobs {
		out = append(out, j.Kind)
	}
	return out
}

func TestCheckJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		q, _ := e.mustOpen(t, newFakeClock())
		t.Run("a job Enqueue would refuse is refused with its reason, and nothing is written", func(t *testing.T) {
			is := is.New(t)
			for _, j := range []lite.NewJob{{Queue: "mail\x1b[2J"}, {Kind: "a\x00b"}, {MaxAttempts: -1}, {Delay: -time.Second},
				{Payload: make([]byte, lite.DefaultMaxPayloadBytes+1)}} {
				err := q.CheckJob(j)
				is.True(err != nil)
				_, enqueueErr := q.Enqueue(t.Context(), j)
				is.True(strings.HasSuffix(enqueueErr.Error(), err.Error())) // the reason Enqueue gives
			}
			is.Equal(countJobs(t, q), 0)
		})
		t.Run("a job Enqueue takes passes, and is not stored by the check", func(t *testing.T) {
			is := is.New(t)
			is.NoErr(q.CheckJob(lite.NewJob{Queue: "mail", Kind: "welcome", Payload: []byte("hi"), Tags: []string{"a"}}))
			is.Equal(countJobs(t, q), 0)
		})
	})
}

func TestEnqueueTx(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a job exists if and only if the caller's transaction commits", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			withOrders(t, q)

			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			_, err = q.EnqueueTx(ctx, tx, lite.NewJob{Queue: "mail"})
			is.NoErr(err)
			is.NoErr(tx.Rollback())
			is.Equal(countJobs(t, q), 0)

			tx = mustBegin(t, q)
			_, err = tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			id, err := q.EnqueueTx(ctx, tx, lite.NewJob{Queue: "mail"})
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(mustGet(t, q, id).Queue, "mail")
		})

		t.Run("ErrDuplicate leaves the caller's transaction usable: its rows and its next job commit", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			withOrders(t, q)
			held := mustEnqueue(t, q, lite.NewJob{Queue: "mail", Kind: "held", UniqueKey: "k"})

			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			id, err := q.EnqueueTx(ctx, tx, lite.NewJob{Queue: "mail", Kind: "dup", UniqueKey: "k"})
			is.True(errors.Is(err, lite.ErrDuplicate))
			is.Equal(id, held)
			_, err = tx.Exec(`insert into orders values (2)`)
			is.NoErr(err)
			_, err = q.EnqueueTx(ctx, tx, lite.NewJob{Queue: "mail", Kind: "next", UniqueKey: "k2"})
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(countOrders(t, q), 2)
			is.Equal(kinds(t, q), []string{"held", "next"})
		})
	})
}

func TestEnqueueBatch(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a batch commits every job and flags duplicates", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			held := mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: "k"})
			got, err := q.EnqueueBatch(t.Context(), []lite.NewJob{
				{Queue: "q", Payload: []byte("1")},
				{Queue: "q", UniqueKey: "k"},
				{Queue: "q", Payload: []byte("3")},
			})
			is.NoErr(err)
			is.Equal(len(got), 3)
			is.Equal(got[1], lite.Enqueued{ID: held, Duplicate: true})
			is.Equal(string(mustGet(t, q, got[2].ID).Payload), "3")
			is.Equal(countJobs(t, q), 3)
		})

		t.Run("a batch whose job fails names it and stores nothing", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			failOnKind(t, e, q, "boom")
			_, err := q.EnqueueBatch(t.Context(), []lite.NewJob{{Kind: "one"}, {Kind: "two"}, {Kind: "boom"}, {Kind: "four"}})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "enqueue batch: job 2: ")) // tried again job by job to say which
			is.True(strings.Contains(err.Error(), "refused by trigger"))
			is.Equal(countJobs(t, q), 0)
		})
	})
}

func TestEnqueueBatchStoresEveryFieldOfEveryJob(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		every := make([]byte, 256)
		for i := range every {
			every[i] = byte(i)
		}
		var jobs []lite.NewJob
		for i, p := range []int{math.MaxInt, math.MinInt, 0, -7, 3} {
			jobs = append(jobs, lite.NewJob{
				Queue:       []string{"q", "quoted.back", "mail-日本", "q", "script/amp"}[i],
				Kind:        []string{"k", `"quoted" \ back`, `{"a":1}`, "ü", "</script>&"}[i],
				Payload:     [][]byte{every, nil, []byte("{}"), {0}, []byte(strings.Repeat("x", 3000))}[i],
				Priority:    p,
				Delay:       time.Duration(i) * time.Hour,
				MaxAttempts: i,
			})
		}
		// Past one statement's share of payload bytes, so the batch takes
		// more than one statement.
		big := lite.NewJob{Queue: "big", Payload: make([]byte, 700<<10)}
		jobs = append(jobs, big, big, big)
		got, err := q.EnqueueBatch(t.Context(), jobs)
		is.NoErr(err)
		is.Equal(len(got), len(jobs))
		for i, want := range jobs {
			is.True(i == 0 || got[i].ID > got[i-1].ID) // ids in the batch's order
			is.True(!got[i].Duplicate)
			j := mustGet(t, q, got[i].ID)
			is.Equal(j.Queue, want.Queue)
			is.Equal(j.Kind, cmp.Or(want.Kind, lite.DefaultKind))
			is.True(bytes.Equal(j.Payload, want.Payload)) // every byte value, and empty
			is.Equal(j.Priority, want.Priority)
			is.Equal(j.RunAt.UnixMilli(), clock.Now().Add(want.Delay).UnixMilli())
			is.Equal(j.MaxAttempts, cmp.Or(want.MaxAttempts, lite.DefaultMaxAttempts))
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.CreatedAt.UnixMilli(), clock.Now().UnixMilli())
		}
		is.Equal(countJobs(t, q), len(jobs))
	})
}

// failOnKind makes every insert of a job of kind fail, as a statement
// that fails part way through a batch: the statement is undone, and on
// SQLite (RAISE(ABORT)) the transaction stays open, while on PostgreSQL
// the error aborts it unless the batch ran under a savepoint of its own.
func failOnKind(tb testing.TB, e testEngine, q *lite.Queue, kind string) {
	tb.Helper()
	stmts := []string{`create trigger fail_kind before insert on lite_jobs
when new.kind = '` + kind + `' begin select raise(abort, 'refused by trigger'); end`}
	if e.name == "postgres" {
		stmts = []string{
			`create function fail_kind() returns trigger language plpgsql as $$
begin raise exception 'refused by trigger'; end $$`,
			`create trigger fail_kind before insert on lite_jobs for each row
when (new.kind = '` + kind + `') execute function fail_kind()`,
		}
	}
	for _, s := range stmts {
		if _, err := q.DB().ExecContext(tb.Context(), s); err != nil {
			tb.Fatal(err)
		}
	}
}

func TestEnqueueBatchTx(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("a batch exists if and only if the caller's transaction commits, and flags duplicates", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			withOrders(t, q)
			held := mustEnqueue(t, q, lite.NewJob{Queue: "q", Kind: "held", UniqueKey: "k"})
			batch := []lite.NewJob{{Queue: "q", Kind: "a"}, {Queue: "q", Kind: "dup", UniqueKey: "k"}, {Queue: "q", Kind: "b"}}

			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			_, err = q.EnqueueBatchTx(ctx, tx, batch)
			is.NoErr(err)
			is.NoErr(tx.Rollback())
			is.Equal(kinds(t, q), []string{"held"})

			tx = mustBegin(t, q)
			_, err = tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			got, err := q.EnqueueBatchTx(ctx, tx, batch)
			is.NoErr(err)
			is.Equal(len(got), 3)
			is.Equal(got[1], lite.Enqueued{ID: held, Duplicate: true})
			is.NoErr(tx.Commit())
			is.Equal(countOrders(t, q), 1)
			is.Equal(kinds(t, q), []string{"held", "a", "b"})
			is.Equal(mustGet(t, q, got[2].ID).Kind, "b")
		})

		t.Run("a batch that fails part way leaves none of itself in the caller's transaction, and the rest commits", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			withOrders(t, q)
			failOnKind(t, e, q, "boom")

			tx := mustBegin(t, q)
			_, err := tx.Exec(`insert into orders values (1)`)
			is.NoErr(err)
			_, err = q.EnqueueTx(ctx, tx, lite.NewJob{Kind: "before"})
			is.NoErr(err)
			_, err = q.EnqueueBatchTx(ctx, tx, []lite.NewJob{{Kind: "one"}, {Kind: "two"}, {Kind: "boom"}, {Kind: "four"}})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), "enqueue batch: job 2: ")) // the job that failed, after two were written
			is.True(strings.Contains(err.Error(), "refused by trigger"))

			_, err = tx.Exec(`insert into orders values (2)`) // the transaction is still usable
			is.NoErr(err)
			_, err = q.EnqueueBatchTx(ctx, tx, []lite.NewJob{{Kind: "after"}})
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(countOrders(t, q), 2)
			// why: jobs one and two were inserted before job 2 failed; the
			// savepoint took them back, and nothing the caller wrote.
			is.Equal(kinds(t, q), []string{"before", "after"})
		})

		t.Run("a batch called with an ended context writes nothing and leaves the transaction usable", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tx := mustBegin(t, q)
			ended, cancel := context.WithCancel(t.Context())
			cancel()
			_, err := q.EnqueueBatchTx(ended, tx, []lite.NewJob{{Kind: "never"}})
			is.True(errors.Is(err, context.Canceled))
			_, err = q.EnqueueBatchTx(t.Context(), tx, []lite.NewJob{{Kind: "after"}})
			is.NoErr(err)
			is.NoErr(tx.Commit())
			is.Equal(kinds(t, q), []string{"after"})
		})

		t.Run("a duplicate key inside one batch is flagged against the job the batch just added", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tx := mustBegin(t, q)
			got, err := q.EnqueueBatchTx(t.Context(), tx, []lite.NewJob{{UniqueKey: "k"}, {UniqueKey: "k"}})
			is.NoErr(err)
			is.Equal(got[1], lite.Enqueued{ID: got[0].ID, Duplicate: true})
			is.NoErr(tx.Commit())
			is.Equal(countJobs(t, q), 1)
		})
	})
}

func TestLease(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("each leased job gets a fresh UUID token, the identity and one attempt", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			for range 50 {
				mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			}
			jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 50, LockedBy: "me"})
			is.NoErr(err)
			is.Equal(len(jobs), 50)
			seen := map[string]bool{}
			for _, j := range jobs {
				u, err := uuid.Parse(j.LeaseToken)
				is.NoErr(err)
				is.Equal(u.Version(), uuid.Version(4))
				is.Equal(u.Variant(), uuid.RFC4122)
				is.True(!seen[j.LeaseToken])
				seen[j.LeaseToken] = true
				is.Equal(j.LockedBy, "me")
				is.Equal(j.Attempts, 1)
				is.Equal(j.Generation, int64(1))
				is.Equal(j.State, lite.StateRunning)
				is.Equal(j.LeasedAt, clock.Now().Local())
				is.Equal(j.HeartbeatAt, clock.Now().Local())
			}
		})

		t.Run("the default identity is host:pid:random", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			j := mustLeaseOne(t, q, "q")
			is.Equal(len(bytes.Split([]byte(j.LockedBy), []byte(":"))), 3)
		})

		t.Run("lease filters by queue and by kind and honours Max", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ctx := t.Context()
			mustEnqueue(t, q, lite.NewJob{Queue: "a", Kind: "x"})
			mustEnqueue(t, q, lite.NewJob{Queue: "a", Kind: "y"})
			mustEnqueue(t, q, lite.NewJob{Queue: "b", Kind: "x"})
			mustEnqueue(t, q, lite.NewJob{Queue: "b", Kind: "y"})

			jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"a"}, Kinds: []string{"y"}, Max: 10})
			is.NoErr(err)
			is.Equal(len(jobs), 1)
			is.Equal(jobs[0].Queue+jobs[0].Kind, "ay")
			jobs, err = q.Lease(ctx, lite.LeaseRequest{Kinds: []string{"x"}, Max: 10})
			is.NoErr(err)
			is.Equal(len(jobs), 2)
			jobs, err = q.Lease(ctx, lite.LeaseRequest{Max: 10})
			is.NoErr(err)
			is.Equal(len(jobs), 1) // only b/y is left
			_, err = q.Lease(ctx, lite.LeaseRequest{Max: -1})
			is.True(err != nil)
		})
	})
}

func TestAckFailed(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		fixed := func(int) time.Duration { return time.Minute }

		t.Run("a failed attempt records its error and retries after the backoff", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.open(t, lite.Options{Now: clock.Now, Backoff: fixed})
			ctx := t.Context()
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 2})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(ctx, a.Lease(), errors.New("smtp timeout")))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateAvailable)
			is.Equal(j.RunAt, clock.Now().Add(time.Minute).Local())
			is.Equal(len(j.Errors), 1)
			is.Equal(j.Errors[0].Error, "smtp timeout")
			is.Equal(j.Errors[0].Attempt, 1)
			is.Equal(j.Errors[0].Generation, a.Generation)

			clock.Advance(time.Minute)
			b := mustLeaseOne(t, q, "q")
			is.Equal(b.Attempts, 2)
			is.NoErr(q.AckFailed(ctx, b.Lease(), errors.New("smtp refused")))
			j = mustGet(t, q, id)
			is.Equal(j.State, lite.StateDead) // attempts spent
			is.Equal(j.FinishedAt, clock.Now().Local())
			is.Equal(len(j.Errors), 2)
			is.Equal(j.Errors[1].Error, "smtp refused")
		})

		t.Run("a permanent error goes straight to dead", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q", MaxAttempts: 5})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(t.Context(), a.Lease(), lite.Permanent(errors.New("bad address"))))
			j := mustGet(t, q, id)
			is.Equal(j.State, lite.StateDead)
			is.Equal(j.Errors[0].Error, "bad address")
		})

		t.Run("a huge error is cut to a bounded size", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			a := mustLeaseOne(t, q, "q")
			is.NoErr(q.AckFailed(t.Context(), a.Lease(), errors.New(string(bytes.Repeat([]byte("e"), 1<<20)))))
			is.True(len(mustGet(t, q, id).Errors[0].Error) < 5000)
		})

		t.Run("a long error is cut between characters, never inside one", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
			a := mustLeaseOne(t, q, "q")
			long := strings.Repeat("€", 3000) // 3 bytes each: no power of two falls between two
			is.NoErr(q.AckFailed(t.Context(), a.Lease(), errors.New(long)))
			got := mustGet(t, q, id).Errors[0].Error
			is.True(utf8.ValidString(got))
			is.True(!strings.ContainsRune(got, utf8.RuneError)) // no half character mended on the way out
			kept, cut := strings.CutSuffix(got, "…")
			is.True(cut)
			is.True(strings.HasPrefix(long, kept))
			is.True(len(kept) > 4000 && len(kept) <= 4<<10) // as much as fits
		})

		t.Run("the default backoff doubles within its jitter and stops at an hour", func(t *testing.T) {
			is := is.New(t)
			for attempt, base := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 5: 16 * time.Second, 13: time.Hour, 1000: time.Hour} {
				for range 100 {
					d := lite.DefaultBackoff(attempt)
					is.True(d >= base/2 && d <= base)
				}
			}
		})
	})
}

func TestNamesThatCannotTravelAreRefused(t *testing.T) {
	is := is.New(t)
	q, _ := mustOpen(t, nil)
	for _, j := range []lite.NewJob{{Queue: "q\xff"}, {Kind: "k\xfe"}} {
		_, err := q.Enqueue(t.Context(), j)
		is.True(err != nil && strings.Contains(err.Error(), "is not valid UTF-8"))
	}
	_, err := lite.NewWorker(q, lite.WorkerOptions{Queues: map[string]lite.QueueConfig{"q\xff": {}}})
	is.True(err != nil && strings.Contains(err.Error(), "is not valid UTF-8"))
	w, _, _ := testWorker(t, q, lite.WorkerOptions{})
	defer func() { is.True(strings.Contains(fmt.Sprint(recover()), "is not valid UTF-8")) }()
	w.Handle("k\xfe", func(context.Context, *lite.Job) error { return nil })
}
