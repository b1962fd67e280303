package litetest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

type greet struct {
	Name string `json:"name"`
}

func (greet) Kind() string { return "greet" }

type bill struct {
	Customer int `json:"customer"`
}

func (bill) Kind() string { return "bill" }

// broken's Kind is empty, which no assertion can look for.
type broken struct{}

func (broken) Kind() string { return "" }

// unencodable's args cannot be encoded as JSON.
type unencodable struct {
	C chan int `json:"c"`
}

func (unencodable) Kind() string { return "unencodable" }

func enqueue[T lite.Args](t *testing.T, q *lite.Queue, args T, opts ...lite.NewJob) int64 {
	t.Helper()
	id, err := lite.EnqueueArgs(t.Context(), q, args, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// passes requires that f recorded no failure and that the kit marked
// itself a helper, so failures point at the caller's line.
func passes(t *testing.T, f *fakeTB) {
	t.Helper()
	if failed, msg := f.failed(); failed {
		t.Fatalf("the assertion failed, want it to pass:\n%s", msg)
	}
	if !f.helped {
		t.Fatal("the kit did not call tb.Helper")
	}
}

// fails requires that f recorded a failure whose messages hold every
// part, and returns the messages.
func fails(t *testing.T, f *fakeTB, parts ...string) string {
	t.Helper()
	failed, msg := f.failed()
	if !failed {
		t.Fatal("the assertion passed, want it to fail")
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Fatalf("the failure does not say %q:\n%s", p, msg)
		}
	}
	if !f.helped {
		t.Fatal("the kit did not call tb.Helper")
	}
	return msg
}

func TestRequireEnqueued(t *testing.T) {
	t.Run("one job of the kind with the args passes and is returned", func(t *testing.T) {
		is := is.New(t)
		q := litetest.Open(t)
		id := enqueue(t, q, greet{Name: "ada"}, lite.NewJob{Queue: "mail", Priority: 3, UniqueKey: "ada"})
		enqueue(t, q, bill{Customer: 1}) // another kind does not count
		var got litetest.Enqueued[greet]
		passes(t, runTB(func(tb testing.TB) {
			got = litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
		}))
		is.Equal(got.ID, id)
		is.Equal(got.Args, greet{Name: "ada"})
		is.Equal(got.Queue, "mail")
		is.Equal(got.State, lite.StateAvailable)
		is.Equal(got.Priority, 3)
		is.Equal(got.UniqueKey, "ada")
		is.Equal(got.MaxAttempts, lite.DefaultMaxAttempts)
		j, err := q.Get(t.Context(), id)
		is.NoErr(err)
		is.Equal(got.RunAt, j.RunAt)
	})

	t.Run("no job of the kind fails, saying what was wanted", func(t *testing.T) {
		q := litetest.Open(t)
		enqueue(t, q, bill{Customer: 1})
		msg := fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
			tb.Errorf("went on after a failed assertion")
		}), `litetest.RequireEnqueued: jobs of kind "greet" in any queue: want 1, found 0`,
			`want[0]: args "{\"name\":\"ada\"}"`, `found no job of kind "greet" in any queue`)
		is.New(t).True(!strings.Contains(msg, "went on")) // a Require stops the test
	})

	t.Run("other args fail, listing the job found with its args", func(t *testing.T) {
		q := litetest.Open(t)
		enqueue(t, q, greet{Name: "bob"})
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
		}), "job 1, for want[0], has other args", `want[0]: args "{\"name\":\"ada\"}"`,
			`job 1 in queue "default" (available): args "{\"name\":\"bob\"}"`)
	})

	t.Run("two jobs of the kind fail, listing both", func(t *testing.T) {
		q := litetest.Open(t)
		enqueue(t, q, greet{Name: "ada"})
		enqueue(t, q, greet{Name: "ada"})
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
		}), "want 1, found 2", `job 1 in queue "default"`, `job 2 in queue "default"`)
	})

	t.Run("args compare as JSON through the type, not as bytes", func(t *testing.T) {
		q := litetest.Open(t)
		_, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "greet", Payload: []byte(`{ "extra": 1, "name": "ada" }`)})
		is.New(t).NoErr(err)
		passes(t, runTB(func(tb testing.TB) { litetest.RequireEnqueued(tb, q, greet{Name: "ada"}) }))
	})

	t.Run("the state does not matter: a job that ran was enqueued", func(t *testing.T) {
		q := litetest.Open(t)
		id := enqueue(t, q, greet{Name: "ada"})
		w, err := lite.NewWorker(q, lite.WorkerOptions{})
		is.New(t).NoErr(err)
		lite.HandleArgs(w, func(ctx context.Context, _ *lite.Job, _ greet) error { return nil })
		litetest.Work(t, w, id)
		var got litetest.Enqueued[greet]
		passes(t, runTB(func(tb testing.TB) { got = litetest.RequireEnqueued(tb, q, greet{Name: "ada"}) }))
		is.New(t).Equal(got.State, lite.StateDone)
	})

	t.Run("a queue narrows what counts, and a failure lists the others", func(t *testing.T) {
		q := litetest.Open(t)
		enqueue(t, q, greet{Name: "ada"}, lite.NewJob{Queue: "mail"})
		enqueue(t, q, greet{Name: "bob"}, lite.NewJob{Queue: "sms"})
		passes(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"}, litetest.Opts{Queue: "mail"})
		}))
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"}, litetest.Opts{Queue: "push"})
		}), `jobs of kind "greet" in queue "push": want 1, found 0`,
			`job 1 in queue "mail" (available): args "{\"name\":\"ada\"}"`,
			`job 2 in queue "sms" (available): args "{\"name\":\"bob\"}"`)
	})

	t.Run("a payload that does not decode fails, quoted", func(t *testing.T) {
		q := litetest.Open(t)
		_, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "greet", Payload: []byte("\x1b[2J{not json")})
		is.New(t).NoErr(err)
		msg := fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
		}), "job 1, for want[0], has args that do not decode into litetest_test.greet",
			`args "\x1b[2J{not json" do not decode: "invalid character`)
		// why: a payload is untrusted; raw, its escape would clear the
		// terminal that shows the failure
		is.New(t).True(!strings.ContainsRune(msg, 0x1b))
	})

	t.Run("options and kinds it cannot use fail, saying why", func(t *testing.T) {
		q := litetest.Open(t)
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{}, litetest.Opts{}, litetest.Opts{})
		}), "litetest.RequireEnqueued: give at most one Opts, not 2")
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, broken{})
		}), "litetest.RequireEnqueued: litetest_test.broken has an empty Kind")
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, unencodable{C: make(chan int)})
		}), "litetest.RequireEnqueued: encode want[0]: json: unsupported type")
	})

	t.Run("a read that fails fails the test", func(t *testing.T) {
		q, err := lite.Open(t.Context(), filepath.Join(t.TempDir(), "closed.db"), lite.Options{})
		is.New(t).NoErr(err)
		is.New(t).NoErr(q.Close())
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueued(tb, q, greet{})
		}), `litetest.RequireEnqueued: read the jobs of kind "greet": sql: database is closed`)
	})

	t.Run("with a TB whose Fatal returns, a failure returns the zero value", func(t *testing.T) {
		q := litetest.Open(t)
		var got litetest.Enqueued[greet]
		var many []litetest.Enqueued[greet]
		f := runFake(&fakeTB{keepGoing: true}, func(tb testing.TB) {
			got = litetest.RequireEnqueued(tb, q, greet{Name: "ada"})
			many = litetest.RequireEnqueuedMany(tb, q, []greet{{Name: "ada"}})
		})
		fails(t, f, "want 1, found 0")
		is.New(t).Equal(got, litetest.Enqueued[greet]{})
		is.New(t).Equal(len(many), 0)
	})
}

func TestRequireEnqueuedMany(t *testing.T) {
	q := litetest.Open(t)
	enqueue(t, q, greet{Name: "ada"})
	enqueue(t, q, greet{Name: "bob"})

	t.Run("the jobs with the args, in the order enqueued, pass", func(t *testing.T) {
		var got []litetest.Enqueued[greet]
		passes(t, runTB(func(tb testing.TB) {
			got = litetest.RequireEnqueuedMany(tb, q, []greet{{Name: "ada"}, {Name: "bob"}})
		}))
		is := is.New(t)
		is.Equal(len(got), 2)
		is.Equal(got[0].Args.Name, "ada")
		is.Equal(got[1].ID, int64(2))
	})

	t.Run("another order fails", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedMany(tb, q, []greet{{Name: "bob"}, {Name: "ada"}})
		}), "litetest.RequireEnqueuedMany", "job 1, for want[0], has other args",
			`want[1]: args "{\"name\":\"ada\"}"`)
	})

	t.Run("fewer or more fail", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedMany(tb, q, []greet{{Name: "ada"}})
		}), "want 1, found 2")
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedMany(tb, q, []greet{{Name: "ada"}, {Name: "bob"}, {Name: "cy"}})
		}), "want 3, found 2")
	})
}

func TestRequireNotEnqueued(t *testing.T) {
	q := litetest.Open(t)
	enqueue(t, q, greet{Name: "ada"}, lite.NewJob{Queue: "mail"})

	t.Run("no job of the kind passes", func(t *testing.T) {
		passes(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueued[bill](tb, q) }))
	})

	t.Run("a job of the kind in another queue passes", func(t *testing.T) {
		passes(t, runTB(func(tb testing.TB) {
			litetest.RequireNotEnqueued[greet](tb, q, litetest.Opts{Queue: "sms"})
		}))
	})

	t.Run("a job of the kind fails, listing it", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueued[greet](tb, q) }),
			`litetest.RequireNotEnqueued: jobs of kind "greet" in any queue: want 0, found 1`,
			`job 1 in queue "mail" (available): args "{\"name\":\"ada\"}"`)
	})
}

func TestRequireEnqueuedTx(t *testing.T) {
	is := is.New(t)
	q := litetest.Open(t)
	ctx := t.Context()
	tx, err := q.DB().BeginTx(ctx, nil)
	is.NoErr(err)
	defer tx.Rollback()
	_, err = lite.EnqueueArgsTx(ctx, q, tx, greet{Name: "ada"})
	is.NoErr(err)

	t.Run("the transaction sees what it enqueued", func(t *testing.T) {
		passes(t, runTB(func(tb testing.TB) { litetest.RequireEnqueuedTx(tb, tx, greet{Name: "ada"}) }))
		passes(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedManyTx(tb, tx, []greet{{Name: "ada"}})
		}))
		passes(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueuedTx[bill](tb, tx) }))
	})

	t.Run("and fails on what it did not enqueue", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) { litetest.RequireEnqueuedTx(tb, tx, greet{Name: "bob"}) }),
			"litetest.RequireEnqueuedTx", "has other args")
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedManyTx(tb, tx, []greet{{Name: "ada"}, {Name: "bob"}})
		}), "litetest.RequireEnqueuedManyTx", "want 2, found 1")
		fails(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueuedTx[greet](tb, tx) }),
			"litetest.RequireNotEnqueuedTx", "want 0, found 1")
	})

	t.Run("outside it, nothing is enqueued before the commit", func(t *testing.T) {
		passes(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueued[greet](tb, q) }))
	})

	is.NoErr(tx.Commit())
	passes(t, runTB(func(tb testing.TB) { litetest.RequireEnqueued(tb, q, greet{Name: "ada"}) }))
}

func TestRequireEnqueuedAmong(t *testing.T) {
	is := is.New(t)
	q := litetest.Open(t)
	ctx := t.Context()
	for _, name := range []string{"ada", "bob", "cy"} { // an app's file holds jobs of earlier requests
		enqueue(t, q, greet{Name: name})
	}
	tx, err := q.DB().BeginTx(ctx, nil)
	is.NoErr(err)
	defer tx.Rollback()
	id, err := lite.EnqueueArgsTx(ctx, q, tx, greet{Name: "dee"})
	is.NoErr(err)
	among := litetest.Opts{Among: true}

	t.Run("the exact form still wants the jobs of the kind to be those wanted", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) { litetest.RequireEnqueuedTx(tb, tx, greet{Name: "dee"}) }),
			"want 1, found 4")
	})

	t.Run("among others, the job with the args is found and returned", func(t *testing.T) {
		is := is.New(t)
		var got litetest.Enqueued[greet]
		passes(t, runTB(func(tb testing.TB) { got = litetest.RequireEnqueuedTx(tb, tx, greet{Name: "dee"}, among) }))
		is.Equal(got.ID, id)
		passes(t, runTB(func(tb testing.TB) { litetest.RequireEnqueued(tb, q, greet{Name: "bob"}, among) }))
	})

	t.Run("among others, a job with other args is not found", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) { litetest.RequireEnqueued(tb, q, greet{Name: "dee"}, among) }),
			`litetest.RequireEnqueued: jobs of kind "greet" in any queue: no job has want[0]'s args, among 3 found`)
	})

	t.Run("many are found among others in id order", func(t *testing.T) {
		is := is.New(t)
		var got []litetest.Enqueued[greet]
		passes(t, runTB(func(tb testing.TB) {
			got = litetest.RequireEnqueuedManyTx(tb, tx, []greet{{Name: "ada"}, {Name: "dee"}}, among)
		}))
		is.Equal(len(got), 2)
		is.Equal(got[1].ID, id)
		fails(t, runTB(func(tb testing.TB) {
			litetest.RequireEnqueuedManyTx(tb, tx, []greet{{Name: "dee"}, {Name: "ada"}}, among)
		}), fmt.Sprintf("no job after job %d (want[0]'s) has want[1]'s args, among 4 found", id))
	})

	t.Run("the not-enqueued forms refuse it", func(t *testing.T) {
		fails(t, runTB(func(tb testing.TB) { litetest.RequireNotEnqueued[bill](tb, q, among) }),
			"Opts.Among has no meaning here")
	})
}
