package lite_test

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// enqueueHeld enqueues j and asserts that its key was held by holder.
func enqueueHeld(tb testing.TB, q *lite.Queue, j lite.NewJob, holder int64) {
	tb.Helper()
	got, err := q.EnqueueOne(tb.Context(), j)
	if !errors.Is(err, lite.ErrDuplicate) || !got.Duplicate || got.ID != holder {
		tb.Fatalf("enqueue %q: got %+v, %v; want the key held by job %d", j.UniqueKey, got, err, holder)
	}
}

func TestAUniqueKeyHeldForAPeriod(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("holds whatever becomes of the job, done included, and lapses at the period's end", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Hour}
			first := mustEnqueue(t, q, job)
			enqueueHeld(t, q, job, first)
			is.NoErr(q.AckDone(ctx, mustLeaseOne(t, q, "q").Lease(), nil))
			enqueueHeld(t, q, job, first) // done, and still held
			other := mustEnqueue(t, q, lite.NewJob{Queue: "other", UniqueKey: "k", UniqueFor: time.Hour})
			is.True(other != first) // keys are per queue

			clock.Advance(time.Hour - time.Millisecond)
			enqueueHeld(t, q, job, first)
			clock.Advance(time.Millisecond)
			second := mustEnqueue(t, q, job)
			is.True(second > first)
			enqueueHeld(t, q, job, second) // the new job holds it for its own period
		})

		t.Run("without a state it holds for the period alone, even while the job waits", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Minute}
			first := mustEnqueue(t, q, job)
			clock.Advance(time.Minute)
			second := mustEnqueue(t, q, job) // the first is still available
			is.True(second != first)
		})

		t.Run("with until finished it holds for the period and then while the job is unfinished", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Minute, UniqueUntil: lite.UniqueUntilFinished}
			first := mustEnqueue(t, q, job)
			j := mustLeaseOne(t, q, "q")
			clock.Advance(time.Hour)
			enqueueHeld(t, q, job, first) // the period is over, the job runs
			is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
			is.True(mustEnqueue(t, q, job) > first)
		})

		t.Run("a period that is not a whole millisecond is rounded up", func(t *testing.T) {
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Nanosecond}
			first := mustEnqueue(t, q, job)
			enqueueHeld(t, q, job, first)
			clock.Advance(time.Millisecond)
			mustEnqueue(t, q, job)
		})
	})
}

func TestAUniqueKeyHeldUntilAState(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("until started releases the key at the lease, so a job may wait while another runs", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted}
			first := mustEnqueue(t, q, job)
			enqueueHeld(t, q, job, first)
			is.Equal(mustLeaseOne(t, q, "q").ID, first)
			second := mustEnqueue(t, q, job)
			enqueueHeld(t, q, job, second) // the one waiting holds it now
			is.Equal(mustGet(t, q, first).UniqueKey, "k")
		})

		t.Run("until started releases the key of a job cancelled or deleted before it ran", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			q, _ := e.mustOpen(t, newFakeClock())
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted}
			first := mustEnqueue(t, q, job)
			is.NoErr(q.Cancel(ctx, first))
			second := mustEnqueue(t, q, job)
			n, err := q.Bulk(ctx, lite.BulkDelete, lite.Filter{IDs: []int64{second}})
			is.NoErr(err)
			is.Equal(n, int64(1))
			third := mustEnqueue(t, q, job)
			// why: an app with its own tables in the file may delete a
			// job's row by hand, with no change of state before it.
			_, err = q.DB().ExecContext(ctx, pick(e, `delete from lite_jobs where id = ?`, `delete from lite_jobs where id = $1`), third)
			is.NoErr(err)
			mustEnqueue(t, q, job)
		})

		t.Run("until finished holds while the job runs and releases it when done", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			q, _ := e.mustOpen(t, newFakeClock())
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilFinished}
			first := mustEnqueue(t, q, job)
			j := mustLeaseOne(t, q, "q")
			enqueueHeld(t, q, job, first)
			is.NoErr(q.AckDone(ctx, j.Lease(), nil))
			is.True(mustEnqueue(t, q, job) > first)
		})

		t.Run("a stale lease releases nothing", func(t *testing.T) {
			is := is.New(t)
			ctx := t.Context()
			q, _ := e.mustOpen(t, newFakeClock())
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilFinished}
			first := mustEnqueue(t, q, job)
			stale := mustLeaseOne(t, q, "q")
			is.NoErr(q.Release(ctx, stale.Lease()))
			mustLeaseOne(t, q, "q")
			is.True(errors.Is(q.AckDone(ctx, stale.Lease(), nil), lite.ErrLeaseLost))
			enqueueHeld(t, q, job, first)
		})

		t.Run("every kind of hold keeps out an enqueue of every kind", func(t *testing.T) {
			q, _ := e.mustOpen(t, newFakeClock())
			for a, holder := range holdKinds {
				for b, other := range holdKinds {
					t.Run(a+" keeps out "+b, func(t *testing.T) {
						queue := strings.ReplaceAll("q-"+a+"-"+b, " ", "-") // a queue of its own: the key is per queue
						holder.Queue, other.Queue = queue, queue
						enqueueHeld(t, q, other, mustEnqueue(t, q, holder))
					})
				}
			}
		})
	})
}

// holdKinds are a job of each kind of unique key, in queue "q".
var holdKinds = map[string]lite.NewJob{
	"a key alone":   {Queue: "q", UniqueKey: "k"},
	"a period":      {Queue: "q", UniqueKey: "k", UniqueFor: time.Hour},
	"until started": {Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted},
	"until done":    {Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilFinished},
}

func TestARetriedHolderTakesItsHoldBack(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for name, job := range holdKinds {
			if job.UniqueFor > 0 {
				continue // a period is not started over: see below
			}
			t.Run(name+": the key free, the retried job holds it again", func(t *testing.T) {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				first := mustEnqueue(t, q, job)
				is.NoErr(q.Cancel(t.Context(), first))
				is.NoErr(q.Retry(t.Context(), first))
				for _, other := range holdKinds {
					enqueueHeld(t, q, other, first)
				}
			})
		}

		t.Run("a retry is refused while another job holds the key, whatever the kinds", func(t *testing.T) {
			q, _ := e.mustOpen(t, newFakeClock())
			for a, job := range holdKinds {
				for b, other := range holdKinds {
					t.Run(b+" holds, "+a+" retried", func(t *testing.T) {
						is := is.New(t)
						queue := strings.ReplaceAll("q-"+a+"-"+b, " ", "-") // a queue of its own: the key is per queue
						job.Queue, other.Queue = queue, queue
						first := mustEnqueue(t, q, job)
						j := mustLeaseOne(t, q, queue)
						is.NoErr(q.AckFailed(t.Context(), j.Lease(), lite.Permanent(errors.New("boom"))))
						if job.UniqueFor > 0 {
							is.NoErr(q.Retry(t.Context(), first)) // its own period: it holds the key still
							enqueueHeld(t, q, other, first)
							return
						}
						second := mustEnqueue(t, q, other)
						err := q.Retry(t.Context(), first)
						is.True(errors.Is(err, lite.ErrDuplicate))
						is.True(strings.Contains(err.Error(), fmt.Sprintf("job %d", second))) // it names the holder
						n, err := q.Bulk(t.Context(), lite.BulkRetry, lite.Filter{IDs: []int64{first}})
						is.NoErr(err)
						is.Equal(n, int64(0)) // a bulk retry skips it
						is.Equal(mustGet(t, q, first).State, lite.StateDead)
						enqueueHeld(t, q, job, second)
					})
				}
			}
		})

		t.Run("a period is not started over: once it has passed, the retried job holds nothing", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			first := mustEnqueue(t, q, holdKinds["a period"])
			is.NoErr(q.Cancel(t.Context(), first))
			clock.Advance(2 * time.Hour)
			is.NoErr(q.Retry(t.Context(), first))
			is.True(mustEnqueue(t, q, holdKinds["a period"]) > first)
		})
	})
}

func TestDebounce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for held, until := range map[string]lite.UniqueUntil{"while unfinished": "", "until started": lite.UniqueUntilStarted} {
			t.Run("replaces the pending job's payload and run time and returns its id, its key held "+held, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				ctx := t.Context()
				job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: until, Debounce: 10 * time.Second, Payload: []byte("1")}
				first, err := q.EnqueueOne(ctx, job)
				is.NoErr(err)
				is.Equal(first.Debounced, false)
				is.True(mustGet(t, q, first.ID).RunAt.Equal(clock.Now().Add(10 * time.Second)))
				clock.Advance(5 * time.Second)
				job.Payload = []byte("2")
				got, err := q.EnqueueOne(ctx, job)
				is.NoErr(err)
				is.Equal(got, lite.Enqueued{ID: first.ID, Debounced: true})
				j := mustGet(t, q, first.ID)
				is.Equal(string(j.Payload), "2")
				is.True(j.RunAt.Equal(clock.Now().Add(10 * time.Second))) // pushed out from now
				jobs, err := q.List(ctx, lite.ListFilter{Queue: "q"})
				is.NoErr(err)
				is.Equal(len(jobs), 1) // no job added
			})
		}

		// Each leaves the job holding the key touched, and not pending:
		// the enqueue is refused and the job keeps its payload.
		for name, c := range map[string]struct {
			job  lite.NewJob
			then func(t *testing.T, q *lite.Queue, id int64)
		}{
			"never touches a running job: the key held, the enqueue is refused": {
				lite.NewJob{},
				func(t *testing.T, q *lite.Queue, id int64) { mustLeaseOne(t, q, "q") },
			},
			"never touches a job that ran and waits to be retried": {
				lite.NewJob{},
				func(t *testing.T, q *lite.Queue, id int64) {
					is.New(t).NoErr(q.AckFailed(t.Context(), mustLeaseOne(t, q, "q").Lease(), errors.New("boom")))
					is.New(t).Equal(mustGet(t, q, id).State, lite.StateAvailable)
				},
			},
			"never touches a job that ended without running, while its period holds the key": {
				lite.NewJob{UniqueFor: time.Hour},
				func(t *testing.T, q *lite.Queue, id int64) { is.New(t).NoErr(q.Cancel(t.Context(), id)) },
			},
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, _ := e.mustOpen(t, clock)
				job := c.job
				job.Queue, job.UniqueKey, job.Debounce, job.Payload = "q", "k", time.Second, []byte("1")
				first := mustEnqueue(t, q, job)
				clock.Advance(time.Second)
				c.then(t, q, first)
				job.Payload = []byte("2")
				enqueueHeld(t, q, job, first)
				is.Equal(string(mustGet(t, q, first).Payload), "1")
			})
		}

		t.Run("never folds into a pending job of another kind: the key held, the enqueue is refused", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			job := lite.NewJob{Queue: "q", Kind: "email", UniqueKey: "k", Debounce: time.Second, Payload: []byte("1")}
			first := mustEnqueue(t, q, job)
			job.Kind, job.Payload = "sms", []byte("2")
			enqueueHeld(t, q, job, first)
			is.Equal(string(mustGet(t, q, first).Payload), "1") // an email handler never gets an sms payload
		})

		t.Run("never touches a running job: the key released at its start, a job is added", func(t *testing.T) {
			is := is.New(t)
			clock := newFakeClock()
			q, _ := e.mustOpen(t, clock)
			ctx := t.Context()
			job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted, Debounce: time.Second, Payload: []byte("1")}
			first := mustEnqueue(t, q, job)
			clock.Advance(time.Second)
			mustLeaseOne(t, q, "q")
			job.Payload = []byte("2")
			got, err := q.EnqueueOne(ctx, job)
			is.NoErr(err)
			is.True(!got.Debounced && got.ID != first)
			is.Equal(string(mustGet(t, q, first).Payload), "1")
			is.Equal(string(mustGet(t, q, got.ID).Payload), "2")
		})

		t.Run("folds jobs of one batch into the first", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			job := func(p string) lite.NewJob {
				return lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted, Debounce: time.Second, Payload: []byte(p)}
			}
			got, err := q.EnqueueBatch(t.Context(), []lite.NewJob{job("1"), job("2"), {Queue: "q", UniqueKey: "p", UniqueFor: time.Hour}, {Queue: "q", UniqueKey: "p", UniqueFor: time.Hour}})
			is.NoErr(err)
			is.Equal(got[1], lite.Enqueued{ID: got[0].ID, Debounced: true})
			is.Equal(got[3], lite.Enqueued{ID: got[2].ID, Duplicate: true})
			is.Equal(string(mustGet(t, q, got[0].ID).Payload), "2")
		})
	})
}

// awaitWaitingBehind returns once a backend of the server waits for the
// one of pid, or once returned says the waiter is done without waiting.
func awaitWaitingBehind(t *testing.T, q *lite.Queue, pid int, returned func() bool) {
	t.Helper()
	for start := time.Now(); !returned(); time.Sleep(time.Millisecond) { // polls for the wait, not for time to pass
		var waiting bool
		if err := q.DB().QueryRowContext(t.Context(),
			`select exists (select 1 from pg_stat_activity where $1 = any(pg_blocking_pids(pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Since(start) > time.Minute {
			t.Fatal("the enqueue neither returned nor waited for the transaction")
		}
	}
}

// An enqueue that debounces a key whose first job another transaction is
// adding at that moment folds into it once that transaction commits: on
// a server its first look finds no holder (the row is not yet
// committed), and its insert waits for the commit and finds the key
// held.
func TestADebounceRacingTheKeysFirstEnqueueFoldsIntoIt(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for held, until := range map[string]lite.UniqueUntil{"while unfinished": "", "until started": lite.UniqueUntilStarted} {
			t.Run("its key held "+held, func(t *testing.T) {
				is := is.New(t)
				q, _ := e.open(t, lite.Options{})
				ctx := t.Context()
				job := lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: until, Debounce: time.Hour, Payload: []byte("1")}
				tx, err := q.DB().BeginTx(ctx, nil)
				is.NoErr(err)
				defer tx.Rollback()
				first, err := q.EnqueueOneTx(ctx, tx, job)
				is.NoErr(err)
				var pid int
				if e.name == "postgres" {
					is.NoErr(tx.QueryRowContext(ctx, `select pg_backend_pid()`).Scan(&pid))
				}
				second := make(chan lite.Enqueued, 1)
				failed := make(chan error, 1)
				go func() {
					job := job
					job.Payload = []byte("2")
					got, err := q.EnqueueOne(ctx, job)
					if err != nil {
						failed <- err
						return
					}
					second <- got
				}()
				if e.name == "postgres" {
					// On a file the enqueue cannot look before the commit:
					// the transaction holds the file's write lock.
					awaitWaitingBehind(t, q, pid, func() bool { return len(second)+len(failed) > 0 })
				}
				is.NoErr(tx.Commit())
				select {
				case err := <-failed:
					t.Fatalf("the racing debounce failed: %v", err)
				case got := <-second:
					is.Equal(got, lite.Enqueued{ID: first.ID, Debounced: true})
				}
				is.Equal(string(mustGet(t, q, first.ID).Payload), "2")
			})
		}
	})
}

func TestConcurrentEnqueuersOfOneKeyAdmitOne(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		kinds := slices.Collect(maps.Values(holdKinds))
		for name, job := range map[string]func(i int) lite.NewJob{
			"for a period":  func(int) lite.NewJob { return holdKinds["a period"] },
			"until started": func(int) lite.NewJob { return holdKinds["until started"] },
			"debounced": func(int) lite.NewJob {
				return lite.NewJob{Queue: "q", UniqueKey: "k", UniqueUntil: lite.UniqueUntilStarted, Debounce: time.Minute}
			},
			"a key alone":   func(int) lite.NewJob { return holdKinds["a key alone"] },
			"of every kind": func(i int) lite.NewJob { return kinds[i%len(kinds)] },
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				clock := newFakeClock()
				q, dsn := e.mustOpen(t, clock)
				// why: a second pool is another writer, as another process
				// or host would be
				queues := []*lite.Queue{q, mustOpenOpts(t, dsn, lite.Options{Now: clock.Now})}
				const n = 16
				got := make([]lite.Enqueued, n)
				errs := make([]error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { got[i], errs[i] = queues[i%2].EnqueueOne(t.Context(), job(i)) })
				}
				wg.Wait()
				added := map[int64]bool{}
				for i := range n {
					if errs[i] != nil && !errors.Is(errs[i], lite.ErrDuplicate) {
						t.Fatalf("enqueue %d: %v", i, errs[i])
					}
					added[got[i].ID] = true
				}
				is.Equal(len(added), 1) // every enqueue names the one job admitted
				jobs, err := q.List(t.Context(), lite.ListFilter{Queue: "q"})
				is.NoErr(err)
				is.Equal(len(jobs), 1)
			})
		}
	})
}

func TestUniqueSettingsRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for name, j := range map[string]lite.NewJob{
			"a negative period":          {UniqueKey: "k", UniqueFor: -time.Second},
			"a state lite does not know": {UniqueKey: "k", UniqueUntil: "done"},
			"a period without a key":     {UniqueFor: time.Second},
			"a state without a key":      {UniqueUntil: lite.UniqueUntilStarted},
			"a debounce without a key":   {Debounce: time.Second},
			"a negative debounce":        {UniqueKey: "k", Debounce: -time.Second},
			"a debounce and a delay":     {UniqueKey: "k", Debounce: time.Second, Delay: time.Second},
		} {
			t.Run(name, func(t *testing.T) {
				is := is.New(t)
				q, _ := e.mustOpen(t, newFakeClock())
				_, err := q.Enqueue(t.Context(), j)
				is.True(err != nil)
				jobs, err := q.List(t.Context(), lite.ListFilter{})
				is.NoErr(err)
				is.Equal(len(jobs), 0)
			})
		}

		t.Run("a workflow refuses them, one clear error, nothing stored", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, newFakeClock())
			_, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
				{Name: "a", Job: lite.NewJob{Queue: "q"}},
				{Name: "b", Job: lite.NewJob{Queue: "q", UniqueKey: "k", UniqueFor: time.Hour}},
			}})
			is.True(err != nil)
			is.Equal(err.Error(), `enqueue workflow: step "b": a workflow's step cannot have UniqueFor, UniqueUntil or Debounce`)
			jobs, err := q.List(t.Context(), lite.ListFilter{})
			is.NoErr(err)
			is.Equal(len(jobs), 0)
		})
	})
}

func TestCleanDeletesLapsedHoldsOnly(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		clock := newFakeClock()
		q, _ := e.mustOpen(t, clock)
		ctx := t.Context()
		lapsing := lite.NewJob{Queue: "q", UniqueKey: "lapsing", UniqueFor: time.Minute}
		waiting := lite.NewJob{Queue: "q", UniqueKey: "waiting", UniqueUntil: lite.UniqueUntilStarted}
		longer := lite.NewJob{Queue: "q", UniqueKey: "longer", UniqueFor: time.Hour}
		mustEnqueue(t, q, lapsing)
		held := mustEnqueue(t, q, waiting)
		kept := mustEnqueue(t, q, longer)
		clock.Advance(time.Minute)
		rep, err := q.Clean(ctx)
		is.NoErr(err)
		is.Equal(rep.LapsedKeys, int64(1))
		rep, err = q.Clean(ctx)
		is.NoErr(err)
		is.Equal(rep.LapsedKeys, int64(0)) // gone
		enqueueHeld(t, q, waiting, held)   // a hold its state has not released stays
		enqueueHeld(t, q, longer, kept)    // and one within its period
		mustEnqueue(t, q, lapsing)
	})
}

func TestAnUpgradeMovesKeysHeldWhileUnfinishedIntoTheHolds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		dsn := e.DSN(t)
		// why: a database as the lite before the one-hold migration left
		// it, with a job holding its key through the partial unique index
		// and a dead one
		stmts := []string{pick(e, `create table lite_migrations (
    version    integer primary key,
    name       text    not null,
    applied_at integer not null
) strict`, `create table lite_migrations (
    version    integer primary key,
    name       text    not null,
    applied_at bigint  not null
)`)}
		files, err := filepath.Glob("migrations/" + e.name + "/*.sql")
		is.NoErr(err)
		slices.Sort(files)
		for _, f := range files {
			var v int
			var name string
			_, err := fmt.Sscanf(strings.TrimSuffix(filepath.Base(f), ".sql"), "%04d_%s", &v, &name)
			is.NoErr(err)
			if name == "one_hold" {
				break
			}
			body, err := os.ReadFile(f)
			is.NoErr(err)
			stmts = append(stmts, string(body), fmt.Sprintf(`insert into lite_migrations values (%d, '%s', 0)`, v, name))
		}
		empty := pick(e, `x''`, `''::bytea`)
		stmts = append(stmts,
			`insert into lite_jobs (queue, kind, payload, run_at, max_attempts, unique_key, created_at) values ('q', 'k', `+empty+`, 0, 1, 'held', 0)`,
			`insert into lite_jobs (queue, kind, payload, run_at, max_attempts, unique_key, created_at, state) values ('q', 'k', `+empty+`, 0, 1, 'dead', 0, 'dead')`)
		plainDB(t, pick(e, "sqlite", "pgx"), dsn, stmts...)
		q, err := lite.Open(t.Context(), dsn, lite.Options{})
		is.NoErr(err)
		t.Cleanup(func() { q.Close() })
		for _, other := range holdKinds {
			other.UniqueKey = "held"
			enqueueHeld(t, q, other, 1) // the old holder holds its key for every kind
		}
		is.NoErr(q.Retry(t.Context(), 2))
		enqueueHeld(t, q, lite.NewJob{Queue: "q", UniqueKey: "dead", UniqueFor: time.Hour}, 2) // a retry takes its hold back
		j := mustLeaseOne(t, q, "q")
		is.NoErr(q.AckDone(t.Context(), j.Lease(), nil))
		mustEnqueue(t, q, lite.NewJob{Queue: "q", UniqueKey: mustGet(t, q, j.ID).UniqueKey}) // its end releases it
	})
}
