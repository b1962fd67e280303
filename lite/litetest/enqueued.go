package litetest

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
)

// Enqueued is a job an assertion found: where and how it was enqueued,
// with its payload decoded into its args type. Get the whole job, with
// its result and errors, from Queue.Get(ctx, ID).
type Enqueued[T lite.Args] struct {
	ID          int64
	Queue       string
	State       lite.State
	Priority    int
	RunAt       time.Time
	MaxAttempts int
	UniqueKey   string
	Args        T
}

// Opts narrows an assertion. The zero value looks at every queue.
type Opts struct {
	// Queue, if set, is the one queue the assertion looks in: jobs of the
	// kind in other queues do not count (a failure still lists them).
	Queue string
	// Among looks for the wanted jobs among any others of the kind, as in
	// an app's file that holds many: RequireEnqueued then requires a job
	// with want's args and returns the first in id order, and
	// RequireEnqueuedMany requires one for each want[i], in id order (each
	// a later job than the one before). Without it the jobs of the kind
	// must be exactly those wanted. The NotEnqueued forms refuse it: they
	// want no job of the kind at all.
	Among bool
}

// RequireEnqueued requires exactly one job of T's kind (in opts' queue),
// whose args are JSON-equal to want, and returns it; with Opts.Among, a
// job with want's args among any others of the kind. It looks at jobs in
// every state, so it holds after the job ran too, and reads what is
// committed; inside your own transaction use RequireEnqueuedTx. It fails
// the test at once otherwise, listing every job of the kind it found.
//
//	litetest.RequireEnqueued(t, q, SendWebhook{URL: u, Event: 7})
//
// Args are compared through T: the payload is decoded into a T and both
// sides are encoded again, so field order and fields T does not have make
// no difference.
func RequireEnqueued[T lite.Args](tb testing.TB, q *lite.Queue, want T, opts ...Opts) Enqueued[T] {
	tb.Helper()
	return only(requireEnqueued(tb, "RequireEnqueued", q.DB(), []T{want}, opts))
}

// RequireEnqueuedTx is RequireEnqueued reading through tx, so it sees the
// jobs tx enqueued before it commits.
func RequireEnqueuedTx[T lite.Args](tb testing.TB, tx *sql.Tx, want T, opts ...Opts) Enqueued[T] {
	tb.Helper()
	return only(requireEnqueued(tb, "RequireEnqueuedTx", tx, []T{want}, opts))
}

// RequireEnqueuedMany requires exactly len(want) jobs of T's kind (in
// opts' queue), the i-th in id order (the order they were enqueued in)
// with args JSON-equal to want[i], and returns them in that order. It is
// RequireEnqueued for more than one job.
func RequireEnqueuedMany[T lite.Args](tb testing.TB, q *lite.Queue, want []T, opts ...Opts) []Enqueued[T] {
	tb.Helper()
	return requireEnqueued(tb, "RequireEnqueuedMany", q.DB(), want, opts)
}

// RequireEnqueuedManyTx is RequireEnqueuedMany reading through tx.
func RequireEnqueuedManyTx[T lite.Args](tb testing.TB, tx *sql.Tx, want []T, opts ...Opts) []Enqueued[T] {
	tb.Helper()
	return requireEnqueued(tb, "RequireEnqueuedManyTx", tx, want, opts)
}

// RequireNotEnqueued requires that no job of T's kind exists (in opts'
// queue), in any state, and fails the test at once listing those found.
// Name the kind by its type:
//
//	litetest.RequireNotEnqueued[SendWebhook](t, q)
func RequireNotEnqueued[T lite.Args](tb testing.TB, q *lite.Queue, opts ...Opts) {
	tb.Helper()
	requireEnqueued(tb, "RequireNotEnqueued", q.DB(), []T{}, opts)
}

// RequireNotEnqueuedTx is RequireNotEnqueued reading through tx.
func RequireNotEnqueuedTx[T lite.Args](tb testing.TB, tx *sql.Tx, opts ...Opts) {
	tb.Helper()
	requireEnqueued(tb, "RequireNotEnqueuedTx", tx, []T{}, opts)
}

// only is the one job RequireEnqueued found; the zero value after a
// failure, for a testing.TB whose Fatal returns.
func only[T lite.Args](jobs []Enqueued[T]) Enqueued[T] {
	if len(jobs) != 1 {
		return Enqueued[T]{}
	}
	return jobs[0]
}

// querier reads from the queue's file: a *sql.DB reads what is committed,
// a *sql.Tx also what it wrote itself.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// found is a job of the kind as read, and what its payload decodes to.
type found[T lite.Args] struct {
	Enqueued[T]
	payload   []byte
	args      []byte // the decoded args encoded again, as want is
	decodeErr error
}

// requireEnqueued is every assertion: the jobs of T's kind in the queue
// opts name must be as many as want, each with want's args in order.
func requireEnqueued[T lite.Args](tb testing.TB, name string, db querier, want []T, opts []Opts) []Enqueued[T] {
	tb.Helper()
	var zero T
	kind := zero.Kind()
	var o Opts
	switch {
	case len(opts) > 1:
		tb.Fatalf("litetest.%s: give at most one Opts, not %d", name, len(opts))
		return nil
	case len(opts) == 1:
		o = opts[0]
	}
	if kind == "" {
		tb.Fatalf("litetest.%s: %T has an empty Kind", name, zero)
		return nil
	}
	wantJSON := make([][]byte, len(want))
	for i, w := range want {
		b, err := json.Marshal(w)
		if err != nil {
			tb.Fatalf("litetest.%s: encode want[%d]: %v", name, i, err)
			return nil
		}
		wantJSON[i] = b
	}
	all, err := readKind[T](tb.Context(), db, kind)
	if err != nil {
		tb.Fatalf("litetest.%s: read the jobs of kind %q: %v", name, kind, err)
		return nil
	}
	var in []found[T]
	for _, f := range all {
		if o.Queue == "" || f.Queue == o.Queue {
			in = append(in, f)
		}
	}
	match := exactly[T]
	if o.Among {
		if len(want) == 0 {
			tb.Fatalf("litetest.%s: Opts.Among has no meaning here: it wants no job of the kind at all", name)
			return nil
		}
		match = among[T]
	}
	matched, problem := match(in, wantJSON)
	if problem != "" {
		tb.Fatal(failure(name, kind, o.Queue, problem, wantJSON, all))
		return nil
	}
	out := make([]Enqueued[T], len(matched))
	for i, f := range matched {
		out[i] = f.Enqueued
	}
	return out
}

// exactly requires the jobs found to be those wanted, in order.
func exactly[T lite.Args](in []found[T], want [][]byte) ([]found[T], string) {
	return in, mismatch(in, want)
}

// among picks, for each want in order, the first job after the one picked
// for the want before it whose args are want's, or says which has none.
func among[T lite.Args](in []found[T], want [][]byte) ([]found[T], string) {
	var picked []found[T]
	next := 0
	for i, w := range want {
		j := slices.IndexFunc(in[next:], func(f found[T]) bool { return f.decodeErr == nil && bytes.Equal(f.args, w) })
		if j < 0 {
			after := ""
			if i > 0 {
				after = fmt.Sprintf(" after job %d (want[%d]'s)", picked[i-1].ID, i-1)
			}
			return nil, fmt.Sprintf("no job%s has want[%d]'s args, among %d found", after, i, len(in))
		}
		picked = append(picked, in[next+j])
		next += j + 1
	}
	return picked, ""
}

// mismatch says how the jobs found differ from those wanted, or "".
func mismatch[T lite.Args](in []found[T], want [][]byte) string {
	if len(in) != len(want) {
		return fmt.Sprintf("want %d, found %d", len(want), len(in))
	}
	for i, f := range in {
		switch {
		case f.decodeErr != nil:
			return fmt.Sprintf("job %d, for want[%d], has args that do not decode into %T", f.ID, i, f.Args)
		case !bytes.Equal(f.args, want[i]):
			return fmt.Sprintf("job %d, for want[%d], has other args", f.ID, i)
		}
	}
	return ""
}

// failure is an assertion's message: what it wanted and every job of the
// kind it found. What the file holds is quoted, never printed raw: a
// payload may hold terminal escapes.
func failure[T lite.Args](name, kind, queue, problem string, want [][]byte, all []found[T]) string {
	var b strings.Builder
	where := "in any queue"
	if queue != "" {
		where = fmt.Sprintf("in queue %q", queue)
	}
	fmt.Fprintf(&b, "litetest.%s: jobs of kind %q %s: %s", name, kind, where, problem)
	if len(want) > 0 {
		b.WriteString("\nwant, in id order:")
		for i, w := range want {
			fmt.Fprintf(&b, "\n\twant[%d]: args %q", i, w)
		}
	}
	if len(all) == 0 {
		fmt.Fprintf(&b, "\nfound no job of kind %q in any queue", kind)
		return b.String()
	}
	fmt.Fprintf(&b, "\nfound, every job of kind %q:", kind)
	for _, f := range all {
		fmt.Fprintf(&b, "\n\tjob %d in queue %q (%s): args %q", f.ID, f.Queue, f.State, f.payload)
		if f.decodeErr != nil {
			fmt.Fprintf(&b, " do not decode: %q", f.decodeErr.Error())
		}
	}
	return b.String()
}

// kindSQL reads what a test asserts on. lite_jobs is the table lite's
// migrations make; the test kit reads it directly so that it can read
// through the caller's transaction. $1 is a parameter to SQLite and
// PostgreSQL alike.
const kindSQL = `select id, queue, state, priority, run_at, max_attempts, coalesce(unique_key, ''), payload
from lite_jobs where kind = $1 order by id`

// readKind reads every job of kind, in id order, decoding each payload
// into a T.
func readKind[T lite.Args](ctx context.Context, db querier, kind string) ([]found[T], error) {
	rows, err := db.QueryContext(ctx, kindSQL, kind)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var all []found[T]
	for rows.Next() {
		var f found[T]
		var runAt int64
		err := rows.Scan(&f.ID, &f.Queue, &f.State, &f.Priority, &runAt, &f.MaxAttempts, &f.UniqueKey, &f.payload)
		if err != nil {
			return nil, err
		}
		f.RunAt = time.UnixMilli(runAt)
		if f.decodeErr = json.Unmarshal(f.payload, &f.Args); f.decodeErr == nil {
			f.args, f.decodeErr = json.Marshal(f.Args)
		}
		all = append(all, f)
	}
	return all, rows.Err()
}
