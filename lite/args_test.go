package lite_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

type welcome struct {
	To string `json:"to"`
}

func (welcome) Kind() string { return "welcome" }

// invoice's jobs belong in the billing queue, with three attempts, one
// unfinished at a time.
type invoice struct {
	Customer int `json:"customer"`
}

func (invoice) Kind() string { return "invoice" }

func (invoice) JobDefaults() lite.NewJob {
	return lite.NewJob{Queue: "billing", MaxAttempts: 3, Priority: 2, UniqueKey: "invoice-run", Kind: "ignored"}
}

type nameless struct{}

func (nameless) Kind() string { return "" }

func TestTypedArgsRoundTrip(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		good, err := lite.EnqueueArgs(ctx, q, welcome{To: "ada@example.com"})
		is.NoErr(err)
		j := mustGet(t, q, good)
		is.Equal(j.Kind, "welcome")
		is.Equal(string(j.Payload), `{"to":"ada@example.com"}`)
		bad := mustEnqueue(t, q, lite.NewJob{Kind: "welcome", Payload: []byte("{not json")})

		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		lite.HandleArgs(w, func(ctx context.Context, _ *lite.Job, args welcome) error {
			lite.SetResult(ctx, []byte("sent to "+args.To))
			return nil
		})
		rep, err := w.RunOnce(ctx)
		is.NoErr(err)
		is.Equal(rep, lite.Report{Leased: 2, Done: 1, Failed: 1})
		is.Equal(string(mustGet(t, q, good).Result), "sent to ada@example.com")
		is.Equal(mustGet(t, q, bad).State, lite.StateDead) // no retry can fix a bad payload
	})
}

func TestJobOfTakesDefaultsFromTheType(t *testing.T) {
	is := is.New(t)
	j, err := lite.JobOf(invoice{Customer: 7})
	is.NoErr(err)
	is.Equal(j.Kind, "invoice") // the type's kind, never one from its defaults
	is.Equal(j.Queue, "billing")
	is.Equal(j.MaxAttempts, 3)
	is.Equal(j.Priority, 2)
	is.Equal(j.UniqueKey, "invoice-run")
	is.Equal(string(j.Payload), `{"customer":7}`)

	// What the caller gives wins over the type's defaults.
	j, err = lite.JobOf(invoice{Customer: 7}, lite.NewJob{Queue: "urgent", MaxAttempts: 9})
	is.NoErr(err)
	is.Equal(j.Queue, "urgent")
	is.Equal(j.MaxAttempts, 9)
	is.Equal(j.Priority, 2)
}

func TestJobOfRefusesWhatContradictsTheType(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func() (lite.NewJob, error)
		want string
	}{
		{"another kind", func() (lite.NewJob, error) {
			return lite.JobOf(welcome{}, lite.NewJob{Kind: "welcom"})
		}, `the options name another kind, "welcom"`},
		{"a payload of its own", func() (lite.NewJob, error) {
			return lite.JobOf(welcome{}, lite.NewJob{Payload: []byte("{}")})
		}, "leave NewJob.Payload empty"},
		{"two option sets", func() (lite.NewJob, error) {
			return lite.JobOf(welcome{}, lite.NewJob{}, lite.NewJob{})
		}, "at most one NewJob"},
		{"an empty kind", func() (lite.NewJob, error) {
			return lite.JobOf(nameless{})
		}, "empty kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.make()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	// The same kind, spelled out, is no contradiction.
	if _, err := lite.JobOf(welcome{}, lite.NewJob{Kind: "welcome"}); err != nil {
		t.Fatal(err)
	}
}

func TestEnqueueArgsTxCommitsWithTheTransaction(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()

		tx, err := q.DB().BeginTx(ctx, nil)
		is.NoErr(err)
		_, err = lite.EnqueueArgsTx(ctx, q, tx, welcome{To: "rolled@back"})
		is.NoErr(err)
		litetest.RequireEnqueuedTx(t, tx, welcome{To: "rolled@back"})
		is.NoErr(tx.Rollback())
		litetest.RequireNotEnqueued[welcome](t, q) // a rolled-back enqueue leaves no job

		tx, err = q.DB().BeginTx(ctx, nil)
		is.NoErr(err)
		_, err = lite.EnqueueArgsTx(ctx, q, tx, invoice{Customer: 1})
		is.NoErr(err)
		is.NoErr(tx.Commit())
		litetest.RequireEnqueued(t, q, invoice{Customer: 1}, litetest.Opts{Queue: "billing"}) // the type's queue

		_, err = lite.EnqueueArgsTx(ctx, q, nil, welcome{}, lite.NewJob{Kind: "other"})
		is.True(err != nil && strings.Contains(err.Error(), "another kind")) // refused before the tx is touched
	})
}

func TestHandleArgsRefusesAnEmptyKind(t *testing.T) {
	q, _ := mustOpen(t, nil)
	w, _, _ := testWorker(t, q, lite.WorkerOptions{})
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "empty Kind") {
			t.Fatalf("got panic %v, want one naming the empty Kind", r)
		}
	}()
	lite.HandleArgs(w, func(context.Context, *lite.Job, nameless) error { return nil })
}

// pointerArgs has its Kind on the value, so a nil *pointerArgs cannot
// name its kind.
type pointerArgs struct{ N int }

func (pointerArgs) Kind() string { return "pointer" }

type controlKind struct{}

func (controlKind) Kind() string { return "bad\x1b[2Jkind" }

func TestTypedArgsRefuseWhatCouldNeverRun(t *testing.T) {
	is := is.New(t)
	_, err := lite.JobOf((*pointerArgs)(nil))
	is.True(err != nil && strings.Contains(err.Error(), "nil pointer")) // it would reach the handler as nil

	q, _ := mustOpen(t, nil)
	w, _, _ := testWorker(t, q, lite.WorkerOptions{})
	panicOf := func(register func()) (msg string) {
		defer func() { msg = fmt.Sprint(recover()) }()
		register()
		return ""
	}
	msg := panicOf(func() { lite.HandleArgs(w, func(context.Context, *lite.Job, *pointerArgs) error { return nil }) })
	is.True(strings.Contains(msg, "implement Kind on the value type")) // not a bare nil dereference
	msg = panicOf(func() { lite.HandleArgs(w, func(context.Context, *lite.Job, controlKind) error { return nil }) })
	is.True(strings.Contains(msg, "contains a control character")) // no enqueue could ever make that kind
}
