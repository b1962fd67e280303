// Package litetrace traces lite's jobs with OpenTelemetry: a span for
// every enqueue, and a span for every run of a job that is a child of the
// enqueue's span, so that a trace shows the request that enqueued a job
// and each attempt the job then took. A program links OpenTelemetry only
// if it imports this package; lite itself does not.
//
// The enqueue's trace context travels in the job's metadata, under the
// keys of the W3C Trace Context (traceparent, and tracestate when there
// is one), so it crosses processes and survives restarts with the job:
//
//	q, err := lite.Open(ctx, path, lite.Options{
//		EnqueueMiddleware: []lite.EnqueueMiddleware{litetrace.Enqueue(litetrace.Options{})},
//	})
//	w, err := lite.NewWorker(q, lite.WorkerOptions{
//		Middleware: []lite.Middleware{litetrace.Run(litetrace.Options{})},
//	})
//
// A run's span is a child of the enqueue's span: a job is one message, and
// a child keeps its attempts in the trace of the request that caused
// them. With Options.NewTrace each run starts a trace of its own instead,
// linked to the enqueue's span, for jobs that run long after they are
// enqueued (a trace that stays open for days is hard to read).
//
// A run's span carries the job's id, kind, queue, attempt and generation
// (lite.job.id, lite.job.kind, lite.queue, lite.job.attempt,
// lite.job.generation) and its outcome (lite.outcome: done, failed,
// snoozed); a failed attempt sets the span's status to Error with the
// error's first line, and records the error. A success leaves the status
// unset, as OpenTelemetry asks of instrumentation.
package litetrace

import (
	"context"
	"errors"
	"strings"

	"github.com/liteq/lite/lite"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configure the middleware. The zero value of each field is its
// default.
type Options struct {
	// TracerProvider makes the spans. Default otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator writes the trace context into a job's metadata and reads
	// it back. Default the W3C Trace Context (propagation.TraceContext).
	Propagator propagation.TextMapPropagator
	// NewTrace starts each run's span as the root of a trace of its own,
	// linked to the enqueue's span, rather than as the enqueue's child.
	NewTrace bool
}

// instrumentation names the tracer, as OpenTelemetry asks: the package's
// import path.
const instrumentation = "github.com/liteq/lite/lite/litetrace"

func (o Options) tracer() trace.Tracer {
	tp := o.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(instrumentation)
}

func (o Options) propagator() propagation.TextMapPropagator {
	if o.Propagator == nil {
		return propagation.TraceContext{}
	}
	return o.Propagator
}

// Enqueue is an enqueue middleware that starts a span for each enqueue
// (a batch is one span, lite.batch.size jobs) and stores its trace
// context in every job's metadata.
func Enqueue(opts Options) lite.EnqueueMiddleware {
	tracer, prop := opts.tracer(), opts.propagator()
	return func(next lite.EnqueueFunc) lite.EnqueueFunc {
		return func(ctx context.Context, jobs []lite.NewJob) ([]lite.Enqueued, error) {
			ctx, span := tracer.Start(ctx, "lite.enqueue", trace.WithSpanKind(trace.SpanKindProducer),
				trace.WithAttributes(attribute.String("messaging.system", "lite"), attribute.Int("lite.batch.size", len(jobs))))
			defer span.End()
			if len(jobs) == 1 {
				span.SetAttributes(queueAndKind(jobs[0].Queue, jobs[0].Kind)...)
			}
			for i := range jobs {
				if jobs[i].Meta == nil {
					jobs[i].Meta = map[string]string{}
				}
				prop.Inject(ctx, propagation.MapCarrier(jobs[i].Meta))
			}
			out, err := next(ctx, jobs)
			if len(out) == 1 {
				span.SetAttributes(attribute.Int64("lite.job.id", out[0].ID), attribute.Bool("lite.duplicate", out[0].Duplicate))
			}
			if err != nil && !errors.Is(err, lite.ErrDuplicate) {
				fail(span, err)
			}
			return out, err
		}
	}
}

// queueAndKind are a job's queue and kind as attributes, with lite's
// defaults for empty ones, as the job will be stored.
func queueAndKind(queue, kind string) []attribute.KeyValue {
	if queue == "" {
		queue = lite.DefaultQueue
	}
	if kind == "" {
		kind = lite.DefaultKind
	}
	return []attribute.KeyValue{attribute.String("lite.queue", queue), attribute.String("lite.job.kind", kind)}
}

// Run is a worker middleware that starts a span for each run of a job,
// a child of (or, with NewTrace, linked to) the span of its enqueue, and
// ends it with the run's outcome. The handler's context carries the span,
// so the handler's own spans are its children.
func Run(opts Options) lite.Middleware {
	tracer, prop := opts.tracer(), opts.propagator()
	return func(next lite.Handler) lite.Handler {
		return func(ctx context.Context, job *lite.Job) error {
			enqueued := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier(job.Meta)))
			start := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(runAttributes(job)...)}
			switch {
			case !enqueued.IsValid():
			case opts.NewTrace:
				start = append(start, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: enqueued}))
			default:
				ctx = trace.ContextWithRemoteSpanContext(ctx, enqueued)
			}
			ctx, span := tracer.Start(ctx, "lite.run "+job.Kind, start...)
			defer span.End()
			err := next(ctx, job)
			var snooze *lite.SnoozeError
			switch {
			case err == nil:
				span.SetAttributes(attribute.String("lite.outcome", "done"))
			case errors.As(err, &snooze):
				span.SetAttributes(attribute.String("lite.outcome", "snoozed"))
			default:
				span.SetAttributes(attribute.String("lite.outcome", "failed"))
				fail(span, err)
			}
			return err
		}
	}
}

func runAttributes(job *lite.Job) []attribute.KeyValue {
	return append(queueAndKind(job.Queue, job.Kind), attribute.String("messaging.system", "lite"),
		attribute.Int64("lite.job.id", job.ID), attribute.Int("lite.job.attempt", job.Attempts),
		attribute.Int64("lite.job.generation", job.Generation))
}

// fail marks span failed with err's first line as its description: a
// panic's error goes on with its stack, which the recorded error keeps.
func fail(span trace.Span, err error) {
	first, _, _ := strings.Cut(err.Error(), "\n")
	span.SetStatus(codes.Error, first)
	span.RecordError(err)
}
