package lite

import "context"

// Middleware wraps a handler: it returns a handler that runs its own code
// around next, sees the job before it runs and the error it returns
// (nil, a Snooze, a Permanent error, the panic of a handler that
// panicked, a timeout), and may change that error or return one of its
// own, which settles the attempt as the handler's error would. It runs in
// the handler's slot, under the handler's context and timeout.
//
// The outcome a middleware sees is the one the worker is about to write:
// whether that write then lands (the lease may have been lost meanwhile)
// is told by the events that follow (WorkerOptions.OnEvent).
//
// A middleware that does not call next skips the handler: its error, or
// nil, is the attempt's outcome.
type Middleware func(next Handler) Handler

// chain wraps h in mws, the first outermost, so that a chain reads in the
// order its middleware runs.
func chain(h Handler, mws []Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// wrap is the handler a job of kind runs: h inside the kind's middleware,
// inside the worker's. h's panic is turned into its error inside the
// chain, so that every middleware sees it as the attempt's outcome, and a
// middleware's own panic is turned into the attempt's error by call.
func (w *Worker) wrap(kind string, h Handler) Handler {
	kindMws := w.opts.KindMiddleware[kind]
	if len(w.opts.Middleware) == 0 && len(kindMws) == 0 {
		return h
	}
	inner := func(ctx context.Context, job *Job) error { return call(ctx, h, job) }
	return chain(chain(inner, kindMws), w.opts.Middleware)
}
