package litetrace_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/litetrace"
	"github.com/matryer/is"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// traced is a queue and a worker traced into an in-memory exporter.
type traced struct {
	q        *lite.Queue
	w        *lite.Worker
	exporter *tracetest.InMemoryExporter
	tracer   trace.Tracer // the application's own
}

func newTraced(t *testing.T, opts litetrace.Options, handler lite.Handler) traced {
	t.Helper()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	opts.TracerProvider = tp
	q := litetest.Open(t, lite.Options{EnqueueMiddleware: []lite.EnqueueMiddleware{litetrace.Enqueue(opts)}})
	w, err := lite.NewWorker(q, lite.WorkerOptions{Middleware: []lite.Middleware{litetrace.Run(opts)}})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("send", handler)
	return traced{q: q, w: w, exporter: exporter, tracer: tp.Tracer("app")}
}

// span is the one ended span named name.
func (tr traced) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range tr.exporter.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q, want 1", len(found), name)
	}
	return found[0]
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestTracing(t *testing.T) {
	ok := func(context.Context, *lite.Job) error { return nil }

	t.Run("a run is a child of its enqueue, which is a child of the caller's span", func(t *testing.T) {
		is := is.New(t)
		var handlerSpan trace.SpanContext
		tr := newTraced(t, litetrace.Options{}, func(ctx context.Context, _ *lite.Job) error {
			handlerSpan = trace.SpanContextFromContext(ctx)
			return nil
		})
		ctx, request := tr.tracer.Start(t.Context(), "request")
		id, err := tr.q.Enqueue(ctx, lite.NewJob{Queue: "mail", Kind: "send"})
		is.NoErr(err)
		request.End()
		is.Equal(litetest.Work(t, tr.w, id).Kind, lite.EventDone)

		req, enq, run := tr.span(t, "request"), tr.span(t, "lite.enqueue"), tr.span(t, "lite.run send")
		is.Equal(enq.Parent.SpanID(), req.SpanContext.SpanID())
		is.Equal(run.Parent.SpanID(), enq.SpanContext.SpanID())        // the run is the enqueue's child
		is.Equal(run.SpanContext.TraceID(), req.SpanContext.TraceID()) // in the request's trace
		is.Equal(handlerSpan.SpanID(), run.SpanContext.SpanID())       // the handler runs inside the run's span
		is.Equal(enq.SpanKind, trace.SpanKindProducer)
		is.Equal(run.SpanKind, trace.SpanKindConsumer)

		job, err := tr.q.Get(t.Context(), id)
		is.NoErr(err)
		is.True(strings.Contains(job.Meta["traceparent"], enq.SpanContext.SpanID().String())) // W3C, in the metadata

		a := attrs(run)
		is.Equal(a["lite.job.id"].AsInt64(), id)
		is.Equal(a["lite.job.kind"].AsString(), "send")
		is.Equal(a["lite.queue"].AsString(), "mail")
		is.Equal(a["lite.job.attempt"].AsInt64(), int64(1))
		is.Equal(a["lite.job.generation"].AsInt64(), int64(1))
		is.Equal(a["lite.outcome"].AsString(), "done")
		is.Equal(run.Status.Code, codes.Unset) // success leaves the status unset
		is.Equal(attrs(enq)["lite.job.id"].AsInt64(), id)
	})

	t.Run("a failed attempt is an error span, and the next attempt says which it is", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, func(context.Context, *lite.Job) error { return errors.New("smtp: 451") })
		id, err := tr.q.Enqueue(t.Context(), lite.NewJob{Kind: "send"})
		is.NoErr(err)
		litetest.Work(t, tr.w, id)
		litetest.Work(t, tr.w, id) // RunJob runs it again at once, backoff or not
		var runs []tracetest.SpanStub
		for _, s := range tr.exporter.GetSpans() {
			if s.Name == "lite.run send" {
				runs = append(runs, s)
			}
		}
		is.Equal(len(runs), 2)
		for i, run := range runs {
			is.Equal(run.Status, sdktrace.Status{Code: codes.Error, Description: "smtp: 451"})
			is.Equal(attrs(run)["lite.outcome"].AsString(), "failed")
			is.Equal(attrs(run)["lite.job.attempt"].AsInt64(), int64(i+1))
			is.Equal(attrs(run)["lite.job.generation"].AsInt64(), int64(i+1))
			is.Equal(len(run.Events), 1) // the error, recorded
		}
	})

	t.Run("a panic is an error span with the panic's first line", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, func(context.Context, *lite.Job) error { panic("boom") })
		id, err := tr.q.Enqueue(t.Context(), lite.NewJob{Kind: "send"})
		is.NoErr(err)
		litetest.Work(t, tr.w, id)
		is.Equal(tr.span(t, "lite.run send").Status, sdktrace.Status{Code: codes.Error, Description: "panic: boom"})
	})

	t.Run("a snooze is no error", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, func(context.Context, *lite.Job) error { return lite.Snooze(1) })
		id, err := tr.q.Enqueue(t.Context(), lite.NewJob{Kind: "send"})
		is.NoErr(err)
		litetest.Work(t, tr.w, id)
		run := tr.span(t, "lite.run send")
		is.Equal(run.Status.Code, codes.Unset)
		is.Equal(attrs(run)["lite.outcome"].AsString(), "snoozed")
	})

	t.Run("with NewTrace a run starts its own trace, linked to its enqueue", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{NewTrace: true}, ok)
		id, err := tr.q.Enqueue(t.Context(), lite.NewJob{Kind: "send"})
		is.NoErr(err)
		litetest.Work(t, tr.w, id)
		enq, run := tr.span(t, "lite.enqueue"), tr.span(t, "lite.run send")
		is.True(!run.Parent.IsValid())
		is.True(run.SpanContext.TraceID() != enq.SpanContext.TraceID())
		is.Equal(len(run.Links), 1)
		is.Equal(run.Links[0].SpanContext.SpanID(), enq.SpanContext.SpanID())
	})

	t.Run("a batch is one enqueue span whose context every job carries", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, ok)
		out, err := tr.q.EnqueueBatch(t.Context(), []lite.NewJob{{Kind: "send"}, {Kind: "send", Meta: map[string]string{"k": "v"}}})
		is.NoErr(err)
		enq := tr.span(t, "lite.enqueue")
		is.Equal(attrs(enq)["lite.batch.size"].AsInt64(), int64(2))
		for _, e := range out {
			job, err := tr.q.Get(t.Context(), e.ID)
			is.NoErr(err)
			is.True(strings.Contains(job.Meta["traceparent"], enq.SpanContext.SpanID().String()))
		}
		job, err := tr.q.Get(t.Context(), out[1].ID)
		is.NoErr(err)
		is.Equal(job.Meta["k"], "v") // the job's own metadata stays
	})

	t.Run("a workflow's steps carry the context of their enqueue, and each run is its child", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, ok)
		wf, err := tr.q.EnqueueWorkflow(t.Context(), lite.Workflow{
			Steps: []lite.Step{{Name: "a", Job: lite.NewJob{Kind: "send"}}, {Job: lite.NewJob{Kind: "send"}, After: []string{"a"}}}})
		is.NoErr(err)
		enq := tr.span(t, "lite.enqueue")
		is.Equal(attrs(enq)["lite.batch.size"].AsInt64(), int64(2))
		for _, id := range wf.IDs {
			job, err := tr.q.Get(t.Context(), id)
			is.NoErr(err)
			is.True(strings.Contains(job.Meta["traceparent"], enq.SpanContext.SpanID().String()))
		}
		is.Equal(litetest.Work(t, tr.w, wf.IDs[0]).Kind, lite.EventDone)
		run := tr.span(t, "lite.run send")
		is.Equal(run.Parent.SpanID(), enq.SpanContext.SpanID()) // the step's run is the workflow enqueue's child
	})

	t.Run("a refused enqueue is an error span", func(t *testing.T) {
		is := is.New(t)
		tr := newTraced(t, litetrace.Options{}, ok)
		_, err := tr.q.Enqueue(t.Context(), lite.NewJob{Kind: "send", Tags: []string{"a,b"}})
		is.True(err != nil)
		is.Equal(tr.span(t, "lite.enqueue").Status.Code, codes.Error)
	})

	t.Run("a job enqueued untraced runs in a trace of its own", func(t *testing.T) {
		is := is.New(t)
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		q := litetest.Open(t) // no enqueue middleware
		w, err := lite.NewWorker(q, lite.WorkerOptions{Middleware: []lite.Middleware{litetrace.Run(litetrace.Options{TracerProvider: tp})}})
		is.NoErr(err)
		w.Handle("send", ok)
		id, err := q.Enqueue(t.Context(), lite.NewJob{Kind: "send"})
		is.NoErr(err)
		litetest.Work(t, w, id)
		spans := exporter.GetSpans()
		is.Equal(len(spans), 1)
		is.True(!spans[0].Parent.IsValid())
		is.Equal(len(spans[0].Links), 0)
	})
}
