package lite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
)

// Args is a job's typed input: its JSON is the job's payload, and its
// type names the job's kind, once. Enqueue with EnqueueArgs and handle
// with HandleArgs, and the two can never disagree on a kind's name: a
// typo is a compile error, not a job that waits forever for a handler.
//
//	type SendWebhook struct {
//		URL   string `json:"url"`
//		Event int64  `json:"event"`
//	}
//
//	func (SendWebhook) Kind() string { return "send_webhook" }
//
// Kind is called on the zero value of the type, so it must return a
// constant and, for a pointer type, must not dereference its receiver.
type Args interface {
	Kind() string
}

// ArgsWithDefaults is Args whose type also gives defaults for its jobs:
// the Queue its kind belongs in, its Priority, its MaxAttempts, a
// UniqueKey (one unfinished job of the kind at a time) and its Tags.
// JobDefaults' other fields are ignored. A field of the NewJob given to EnqueueArgs or JobOf
// wins over the default when it is not its zero value.
type ArgsWithDefaults interface {
	Args
	JobDefaults() NewJob
}

// kindOf is the kind a typed handler uses for T, read from T's zero value.
func kindOf[T Args]() (kind string) {
	var zero T
	defer func() {
		if recover() != nil {
			panic(fmt.Sprintf("lite: HandleArgs: %T's Kind reads its receiver, which is nil here: implement Kind on the value type, returning a constant", zero))
		}
	}()
	return zero.Kind()
}

// JobOf makes the NewJob for args: its kind is args' Kind, its payload
// the JSON of args, and the rest comes from opts (at most one NewJob,
// whose Kind must be empty or the same and whose Payload must be empty),
// then from args' JobDefaults. Use it to enqueue typed jobs in a batch:
//
//	a, _ := lite.JobOf(SendWebhook{URL: u, Event: 1})
//	b, _ := lite.JobOf(SendWebhook{URL: u, Event: 2}, lite.NewJob{Priority: 5})
//	q.EnqueueBatchTx(ctx, tx, []lite.NewJob{a, b})
func JobOf[T Args](args T, opts ...NewJob) (NewJob, error) {
	if v := reflect.ValueOf(args); v.Kind() == reflect.Pointer && v.IsNil() {
		return NewJob{}, fmt.Errorf("args of type %T: a nil pointer is no job's args", args)
	}
	kind := args.Kind()
	var j NewJob
	switch len(opts) {
	case 0:
	case 1:
		j = opts[0]
	default:
		return NewJob{}, fmt.Errorf("job of kind %q: give at most one NewJob of options, not %d", kind, len(opts))
	}
	if kind == "" {
		return NewJob{}, fmt.Errorf("args of type %T: Kind() returned an empty kind", args)
	}
	if j.Kind != "" && j.Kind != kind {
		return NewJob{}, fmt.Errorf("job of kind %q: the options name another kind, %q", kind, j.Kind)
	}
	if j.Payload != nil {
		return NewJob{}, fmt.Errorf("job of kind %q: the payload is the JSON of its args; leave NewJob.Payload empty", kind)
	}
	if d, ok := any(args).(ArgsWithDefaults); ok {
		j = withDefaults(j, d.JobDefaults())
	}
	payload, err := json.Marshal(args)
	if err != nil {
		return NewJob{}, fmt.Errorf("job of kind %q: encode args: %w", kind, err)
	}
	j.Kind, j.Payload = kind, payload
	return j, nil
}

// withDefaults fills the fields j leaves at their zero value from d: the
// ones that describe a kind rather than one job. Kind and Payload are the
// args' own; when a job runs is the caller's to say.
func withDefaults(j, d NewJob) NewJob {
	if j.Queue == "" {
		j.Queue = d.Queue
	}
	if j.Priority == 0 {
		j.Priority = d.Priority
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = d.MaxAttempts
	}
	if j.UniqueKey == "" {
		j.UniqueKey = d.UniqueKey
	}
	if len(j.Tags) == 0 {
		j.Tags = d.Tags
	}
	return j
}

// EnqueueArgs enqueues a job for args (see JobOf for opts) and returns its
// id, as Queue.Enqueue does.
func EnqueueArgs[T Args](ctx context.Context, q *Queue, args T, opts ...NewJob) (int64, error) {
	j, err := JobOf(args, opts...)
	if err != nil {
		return 0, fmt.Errorf("enqueue: %w", err)
	}
	return q.Enqueue(ctx, j)
}

// EnqueueArgsTx enqueues a job for args inside the caller's transaction,
// as Queue.EnqueueTx does: the job exists if and only if tx commits.
func EnqueueArgsTx[T Args](ctx context.Context, q *Queue, tx *sql.Tx, args T, opts ...NewJob) (int64, error) {
	j, err := JobOf(args, opts...)
	if err != nil {
		return 0, fmt.Errorf("enqueue: %w", err)
	}
	return q.EnqueueTx(ctx, tx, j)
}

// HandleArgs registers h for the kind of T, with the payload decoded into
// T. A payload that does not decode is a permanent failure: no retry can
// fix it. Like Worker.Handle, it panics if the kind is registered twice,
// or if T's Kind is empty.
func HandleArgs[T Args](w *Worker, h func(ctx context.Context, job *Job, args T) error) {
	kind := kindOf[T]()
	if kind == "" {
		var zero T
		panic(fmt.Sprintf("lite: HandleArgs: %T has an empty Kind", zero))
	}
	w.Handle(kind, func(ctx context.Context, job *Job) error {
		var args T
		if err := json.Unmarshal(job.Payload, &args); err != nil {
			return Permanent(fmt.Errorf("decode %s payload: %w", kind, err))
		}
		return h(ctx, job, args)
	})
}
