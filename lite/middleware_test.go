package lite_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// trail records what a chain of middleware saw, in order.
type trail struct {
	mu   sync.Mutex
	seen []string
	errs []error
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seen = append(tr.seen, s)
}

// named is a middleware that records its name before and after next, and
// the error next returned.
func (tr *trail) named(name string) lite.Middleware {
	return func(next lite.Handler) lite.Handler {
		return func(ctx context.Context, job *lite.Job) error {
			tr.add(name + " " + job.Kind)
			err := next(ctx, job)
			tr.mu.Lock()
			tr.errs = append(tr.errs, err)
			tr.mu.Unlock()
			tr.add("/" + name)
			return err
		}
	}
}

// runWith enqueues one job of kind, runs it once with a worker of opts
// whose handler for kind is h, and returns the job as it ended.
func runWith(t *testing.T, q *lite.Queue, opts lite.WorkerOptions, kind string, h lite.Handler) *lite.Job {
	t.Helper()
	is := is.New(t)
	id := mustEnqueue(t, q, lite.NewJob{Kind: kind, MaxAttempts: 1})
	w, err := lite.NewWorker(q, opts)
	is.NoErr(err)
	w.Handle(kind, h)
	_, err = w.RunOnce(t.Context())
	is.NoErr(err)
	return mustGet(t, q, id)
}

func TestMiddleware(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		ok := func(context.Context, *lite.Job) error { return nil }

		t.Run("the chain runs in the order given, the worker's around the kind's, around the handler", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tr := &trail{}
			opts := lite.WorkerOptions{
				Middleware:     []lite.Middleware{tr.named("a"), tr.named("b")},
				KindMiddleware: map[string][]lite.Middleware{"email": {tr.named("c")}},
			}
			j := runWith(t, q, opts, "email", func(context.Context, *lite.Job) error { tr.add("handler"); return nil })
			is.Equal(j.State, lite.StateDone)
			is.Equal(tr.seen, []string{"a email", "b email", "c email", "handler", "/c", "/b", "/a"})
		})

		t.Run("a kind's chain does not wrap another kind", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tr := &trail{}
			opts := lite.WorkerOptions{
				Middleware:     []lite.Middleware{tr.named("all")},
				KindMiddleware: map[string][]lite.Middleware{"email": {tr.named("email-only")}},
			}
			runWith(t, q, opts, "sms", ok)
			is.Equal(tr.seen, []string{"all sms", "/all"})
		})

		t.Run("a middleware sees the handler's error", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tr := &trail{}
			bank := errors.New("bank down")
			opts := lite.WorkerOptions{Middleware: []lite.Middleware{tr.named("a")}}
			j := runWith(t, q, opts, "pay", func(context.Context, *lite.Job) error { return bank })
			is.Equal(j.State, lite.StateDead)
			is.Equal(len(tr.errs), 1)
			is.True(errors.Is(tr.errs[0], bank))
		})

		t.Run("a middleware's error fails the attempt as a handler's would", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			refuse := func(next lite.Handler) lite.Handler {
				return func(ctx context.Context, job *lite.Job) error {
					if err := next(ctx, job); err != nil {
						return err
					}
					return errors.New("audit log refused the job")
				}
			}
			j := runWith(t, q, lite.WorkerOptions{Middleware: []lite.Middleware{refuse}}, "pay", ok)
			is.Equal(j.State, lite.StateDead) // one attempt, spent by the middleware's error
			is.Equal(len(j.Errors), 1)
			is.Equal(j.Errors[0].Error, "audit log refused the job")
		})

		t.Run("a middleware that skips the handler settles the job with its own outcome", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			ran := false
			skip := func(lite.Handler) lite.Handler {
				return func(context.Context, *lite.Job) error { return lite.Permanent(errors.New("kind disabled")) }
			}
			j := runWith(t, q, lite.WorkerOptions{KindMiddleware: map[string][]lite.Middleware{"pay": {skip}}}, "pay",
				func(context.Context, *lite.Job) error { ran = true; return nil })
			is.True(!ran)
			is.Equal(j.State, lite.StateDead)
		})

		t.Run("a handler's panic reaches the middleware as the attempt's error", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			tr := &trail{}
			opts := lite.WorkerOptions{Middleware: []lite.Middleware{tr.named("a")}}
			j := runWith(t, q, opts, "pay", func(context.Context, *lite.Job) error { panic("boom") })
			is.Equal(tr.seen, []string{"a pay", "/a"}) // the middleware ran on past the panic
			is.Equal(len(tr.errs), 1)
			is.True(strings.HasPrefix(tr.errs[0].Error(), "panic: boom")) // as the job records it
			is.Equal(j.State, lite.StateDead)
			is.True(strings.HasPrefix(j.Errors[0].Error, "panic: boom"))
		})

		t.Run("a middleware's own panic fails the attempt, and the worker goes on", func(t *testing.T) {
			is := is.New(t)
			q, _ := e.mustOpen(t, nil)
			boom := func(lite.Handler) lite.Handler {
				return func(context.Context, *lite.Job) error { panic("middleware boom") }
			}
			j := runWith(t, q, lite.WorkerOptions{Middleware: []lite.Middleware{boom}}, "pay", ok)
			is.Equal(j.State, lite.StateDead)
			is.True(strings.HasPrefix(j.Errors[0].Error, "panic: middleware boom"))
		})
	})
}
