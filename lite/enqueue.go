package lite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// NewJob describes a job to enqueue. The zero value of each field is its
// default.
type NewJob struct {
	// Queue groups jobs that workers lease together. Default "default".
	Queue string
	// Kind picks the handler. Default "default".
	Kind string
	// Payload is the handler's input, up to Options.MaxPayloadBytes.
	Payload []byte
	// Priority orders available jobs in a queue: higher runs first.
	Priority int
	// RunAt is the earliest time the job may run. Default now. It must lie
	// from 1970-01-01 to 9999-12-31 UTC; a time outside is refused, not
	// run at once.
	RunAt time.Time
	// Delay runs the job this long from now. Set RunAt or Delay, not both.
	// Now plus Delay must lie in the range RunAt must.
	Delay time.Duration
	// MaxAttempts is how many leases the job gets before it is dead.
	// Default DefaultMaxAttempts.
	MaxAttempts int
	// UniqueKey, if set, admits one unfinished (available or running) job
	// with this key in the queue: the job holds the key until it is
	// finished (done, dead or cancelled; a Retry takes it back, or is
	// refused while another job holds it). Enqueueing another returns
	// ErrDuplicate and the id of the job holding the key. UniqueFor and
	// UniqueUntil hold the key otherwise; Debounce folds an enqueue into
	// the job holding it.
	UniqueKey string
	// UniqueFor, with UniqueKey, holds the key for this long after the job
	// is enqueued, whatever state the job reaches (done included): no
	// other job with the key is admitted to the queue until it has passed,
	// nor, with UniqueUntil, until the job has reached that state too.
	// It counts in whole milliseconds, rounded up.
	UniqueFor time.Duration
	// UniqueUntil, with UniqueKey, is the state of the job that releases
	// its key: UniqueUntilStarted or UniqueUntilFinished (after UniqueFor,
	// if that is set too). Left empty, the key is held while the job is
	// unfinished or, with UniqueFor, for that period alone. Every kind of
	// hold sees the others: a key held one way is held for every enqueue.
	UniqueUntil UniqueUntil
	// Debounce, with UniqueKey, folds the enqueue into the job holding the
	// key if that job has not started yet (available, never leased): it
	// takes this job's payload and expiry, its run time moves to Debounce
	// from now, and the enqueue returns its id, with Enqueued.Debounced
	// set, instead of adding a job. A job that has started is never
	// touched: the enqueue then adds a job as it would without Debounce
	// (or returns ErrDuplicate while the key holds), to run Debounce from
	// now. Set Debounce, RunAt or Delay, one of them.
	Debounce time.Duration
	// Tags label the job, to find it by (ListFilter.Tags, lite ls --tag):
	// up to MaxTags, each up to MaxTagBytes, printable, without a comma.
	// They are stored sorted, each once.
	Tags []string
	// Meta is a small map carried with the job for middleware and
	// handlers (a trace context, a request id): up to MaxMetaBytes as
	// JSON, keys not empty, keys and values valid UTF-8.
	Meta map[string]string
	// DependsOn lists jobs this one waits for: it is stored blocked, and
	// becomes available in the transaction of the last one's done. A job
	// that does not exist is refused, as one already dead or cancelled is
	// under DependencyCancel. See EnqueueWorkflow for jobs that wait for
	// each other before they have ids.
	DependsOn []int64
	// OnDependencyFailure is what a job waited for that ends dead or
	// cancelled does to this one. Default DependencyCancel.
	OnDependencyFailure DependencyPolicy
	// Callback, if set, is enqueued in the transaction that ends this job,
	// whoever ends it: done, dead, cancelled, reclaimed with its last
	// attempt spent.
	Callback *Callback
	// Key groups the job with others of its queue (a customer, a remote
	// host) for the queue's MaxRunningPerKey and Sequence (see Limits):
	// up to MaxKeyBytes, valid UTF-8 without control characters. A queue
	// without such settings ignores it.
	Key string
	// ExpiresAt is when the job must have started by: once it has passed,
	// no lease takes the job, and the reclaim pass cancels it with the
	// reason in its errors (see CancelExpired). Default never.
	ExpiresAt time.Time
	// ExpiresIn sets ExpiresAt to this long from now. Set ExpiresAt or
	// ExpiresIn, not both.
	ExpiresIn time.Duration
}

// MaxKeyBytes bounds NewJob.Key.
const MaxKeyBytes = 256

// Defaults for NewJob.
const (
	DefaultQueue       = "default"
	DefaultKind        = "default"
	DefaultMaxAttempts = 10
)

// The range of run times a job may have. Run times are stored as unix
// milliseconds: far outside this range they overflow, and a run time in
// year 300 million would wrap to the past and run at once. Inside it every
// time round-trips, and a time before 1970 is more likely a zero-ish
// time.Time computed by mistake than a wish to run now.
var (
	minRunAt = time.Unix(0, 0).UTC()
	maxRunAt = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC)
)

// nameProblem says what makes a queue or kind name unusable, or "" when
// nothing does. A worker hands queue and kind to its command's
// environment, where a NUL fails every attempt, and admins read them in a
// terminal, where the other control characters are escapes. Lists of
// names travel to SQL as JSON, which would turn bytes that are not UTF-8
// into U+FFFD, so that a worker could never name the queue it serves.
func nameProblem(name string) string {
	switch {
	case !utf8.ValidString(name):
		return "is not valid UTF-8"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "contains a control character"
	}
	return ""
}

// CheckName says why name cannot be a job's kind, or a queue a worker or a
// filter names, or nil when it can. A name given to a new job, limit or
// schedule as its queue also passes CheckQueueName.
func CheckName(name string) error {
	if problem := nameProblem(name); problem != "" {
		return fmt.Errorf("%q %s", name, problem)
	}
	return nil
}

// MaxQueueNameChars bounds a queue's name (see CheckQueueName).
const MaxQueueNameChars = 128

// queueNameSymbols are the characters besides letters and digits that a
// queue's name may have.
const queueNameSymbols = "._:-/"

// CheckQueueName says why name cannot be the queue of a new job, limit
// or schedule, or nil when it can: a queue's name is 1 to
// MaxQueueNameChars letters (any script, composed: NFC), digits, and
// . _ : - / . Every queue name travels in lists (lite work -q a,b; a
// worker's log), URLs
// and metrics labels, where a space, a comma or a quote would split or
// garble it. A queue named before this rule keeps working: workers,
// filters, Pause and reads take any name CheckName takes.
func CheckQueueName(name string) error {
	if err := CheckName(name); err != nil {
		return codeError{err, ErrInvalid}
	}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return codeError{errors.New("name is empty"), ErrInvalid}
	case n > MaxQueueNameChars:
		return codeError{fmt.Errorf("name of %d characters: a queue's name has at most %d", n, MaxQueueNameChars), ErrInvalid}
	}
	prev := rune(-1)
	for _, r := range name {
		if !inQueueName(r, prev) {
			return codeError{fmt.Errorf("%q has %q: a queue's name has letters, digits and %s only", name, r, queueNameSymbols), ErrInvalid}
		}
		prev = r
	}
	if !norm.NFC.IsNormalString(name) {
		return codeError{fmt.Errorf("%q is not written composed (Unicode NFC): it would be another queue than the one that looks the same", name), ErrInvalid}
	}
	return nil
}

// inQueueName says whether r may follow prev (-1 at the start) in a
// queue's name. A mark (an accent, a vowel sign) comes only after a
// letter or its marks, and never one that shows nothing (a grapheme
// joiner, a variation selector): names that look alike are one name.
func inQueueName(r, prev rune) bool {
	switch {
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return false // a Hangul filler is a letter, and shows nothing too
	case unicode.IsLetter(r), unicode.IsDigit(r), strings.ContainsRune(queueNameSymbols, r):
		return true
	case unicode.IsMark(r):
		return prev >= 0 && (unicode.IsLetter(prev) || unicode.IsMark(prev))
	}
	return false
}

// jobRow is a validated NewJob, ready to bind.
type jobRow struct {
	queue, kind string
	payload     []byte
	priority    int
	runAt       int64
	fromNow     bool // runAt counts from the time validate read (no RunAt given)
	maxAttempts int
	uniqueKey   sql.NullString
	tags, meta  string // JSON texts; "" (a schedule's job) is none
	follows     follows
	key         sql.NullString
	expiresAt   sql.NullInt64
	unique      uniqueHold
}

func (q *Queue) validate(j NewJob) (jobRow, error) {
	now := q.opts.Now()
	r := jobRow{queue: j.Queue, kind: j.Kind, payload: j.Payload, priority: j.Priority,
		maxAttempts: j.MaxAttempts, uniqueKey: sql.NullString{String: j.UniqueKey, Valid: j.UniqueKey != ""}}
	if r.queue == "" {
		r.queue = DefaultQueue
	}
	if r.kind == "" {
		r.kind = DefaultKind
	}
	if r.payload == nil {
		r.payload = []byte{}
	}
	if err := CheckQueueName(r.queue); err != nil {
		return r, fmt.Errorf("queue %w", err)
	}
	if problem := nameProblem(r.kind); problem != "" {
		return r, fmt.Errorf("kind %q %s", r.kind, problem)
	}
	var err error
	if r.tags, err = encodeTags(j.Tags); err != nil {
		return r, err
	}
	if r.meta, err = encodeMeta(j.Meta); err != nil {
		return r, err
	}
	if r.follows, err = q.validateFollows(j, r.queue); err != nil {
		return r, err
	}
	if len(r.payload) > q.opts.MaxPayloadBytes {
		return r, fmt.Errorf("payload of %d bytes: %w (limit %d)", len(r.payload), ErrTooLarge, q.opts.MaxPayloadBytes)
	}
	runAt := now
	switch {
	case j.Delay < 0:
		return r, fmt.Errorf("negative delay %s", j.Delay)
	case j.Delay > 0 && !j.RunAt.IsZero():
		return r, errors.New("both RunAt and Delay set")
	case j.Debounce < 0:
		return r, fmt.Errorf("negative debounce %s", j.Debounce)
	case j.Debounce > 0 && (j.Delay > 0 || !j.RunAt.IsZero()):
		return r, errors.New("both Debounce and RunAt or Delay set")
	case j.Debounce > 0:
		runAt = now.Add(j.Debounce)
	case j.Delay > 0:
		runAt = now.Add(j.Delay)
	case !j.RunAt.IsZero():
		runAt = j.RunAt
	}
	// Checked before UnixMilli, which is undefined where it overflows.
	if runAt.Before(minRunAt) || runAt.After(maxRunAt) {
		return r, fmt.Errorf("run time %s is outside %s to %s", runAt.UTC().Format(time.RFC3339Nano),
			minRunAt.Format(time.DateOnly), maxRunAt.Format(time.DateOnly))
	}
	r.runAt = runAt.UnixMilli()
	r.fromNow = j.RunAt.IsZero()
	if err := r.setKeyAndExpiry(j, now); err != nil {
		return r, err
	}
	if r.unique, err = validateUnique(j); err != nil {
		return r, err
	}
	switch {
	case r.maxAttempts < 0:
		return r, fmt.Errorf("negative max attempts %d", r.maxAttempts)
	case r.maxAttempts == 0:
		r.maxAttempts = DefaultMaxAttempts
	}
	return r, nil
}

// setKeyAndExpiry checks and sets j's Key, ExpiresAt and ExpiresIn, once
// r.runAt is set.
func (r *jobRow) setKeyAndExpiry(j NewJob, now time.Time) error {
	if j.Key != "" {
		if problem := nameProblem(j.Key); problem != "" {
			return fmt.Errorf("key %q %s", j.Key, problem)
		}
		if len(j.Key) > MaxKeyBytes {
			return fmt.Errorf("key of %d bytes: %w (limit %d)", len(j.Key), ErrTooLarge, MaxKeyBytes)
		}
		r.key = sql.NullString{String: j.Key, Valid: true}
	}
	expires := j.ExpiresAt
	switch {
	case j.ExpiresIn < 0:
		return fmt.Errorf("negative expiry %s", j.ExpiresIn)
	case j.ExpiresIn > 0 && !j.ExpiresAt.IsZero():
		return errors.New("both ExpiresAt and ExpiresIn set")
	case j.ExpiresIn > 0:
		expires = now.Add(j.ExpiresIn)
	case expires.IsZero():
		return nil
	}
	if expires.Before(minRunAt) || expires.After(maxRunAt) {
		return fmt.Errorf("expiry %s is outside %s to %s", expires.UTC().Format(time.RFC3339Nano),
			minRunAt.Format(time.DateOnly), maxRunAt.Format(time.DateOnly))
	}
	// A job due later than now that expires by its run time could never
	// start; one due now with an expiry passed is taken, and cancelled by
	// the next expiry pass with its reason.
	if r.runAt > now.UnixMilli() && expires.UnixMilli() <= r.runAt {
		return fmt.Errorf("expiry %s is not after the run time %s: %w", expires.UTC().Format(time.RFC3339Nano),
			time.UnixMilli(r.runAt).UTC().Format(time.RFC3339Nano), ErrInvalid)
	}
	r.expiresAt = sql.NullInt64{Int64: expires.UnixMilli(), Valid: true}
	return nil
}

// insertJobSQL adds one job; a job with a unique key takes its hold
// first (see insertHeld). A job whose run time counts from now (?14: no
// RunAt given) is due no earlier than its created_at (?8), read once the
// write holds its lock: the time its run time counts from was read
// before that wait.
var insertJobSQL = stmt{
	sqlite: `insert into lite_jobs
    (queue, kind, payload, priority, run_at, max_attempts, unique_key, created_at, tags, meta, job_key, expires_at, unique_hold)
values (?1, ?2, ?3, ?4, case when ?14 then max(?5, ?8) else ?5 end, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
returning id`,
	postgres: `insert into lite_jobs
    (queue, kind, payload, priority, run_at, max_attempts, unique_key, created_at, tags, meta, job_key, expires_at, unique_hold)
values ($1, $2, $3, $4, case when $14::boolean then greatest($5::bigint, $8::bigint) else $5::bigint end,
    $6, $7, $8, $9::text::jsonb, $10::text::jsonb, $11, $12, $13)
returning id`,
}

// insert adds one validated job, or with Debounce folds it into the
// pending job holding its key. On a held unique key it returns the id of
// the job holding the key, and ErrDuplicate.
func (q *Queue) insert(ctx context.Context, c conn, r jobRow) (Enqueued, error) {
	if r.unique.debounce {
		if id, ok, err := q.debounce(ctx, c, r); err != nil || ok {
			return Enqueued{ID: id, Debounced: ok}, err
		}
	}
	if !r.uniqueKey.Valid {
		id, err := q.insertRow(ctx, c, r)
		return Enqueued{ID: id}, err
	}
	id, err := q.insertHeld(ctx, c, r)
	if errors.Is(err, ErrDuplicate) && r.unique.debounce {
		// On a server, the look above ran before another enqueue of the
		// key committed, and the insert then waited for that commit: the
		// holder it found may be pending, so look again, now that its row
		// can be seen. A holder that has started since stays a duplicate.
		if did, ok, derr := q.debounce(ctx, c, r); derr != nil || ok {
			return Enqueued{ID: did, Debounced: ok}, derr
		}
	}
	return Enqueued{ID: id, Duplicate: errors.Is(err, ErrDuplicate)}, err
}

// insertRow runs insertJobSQL for r.
func (q *Queue) insertRow(ctx context.Context, c conn, r jobRow) (int64, error) {
	var id int64
	err := c.QueryRowContext(ctx, q.sql(insertJobSQL), r.queue, r.kind, r.payload, r.priority, r.runAt,
		r.maxAttempts, r.uniqueKey, q.nowOn(c).UnixMilli(), orEmpty(r.tags, emptyTags), orEmpty(r.meta, emptyMeta), r.key, r.expiresAt,
		r.unique.hold, r.fromNow).Scan(&id)
	return id, err
}

// Enqueue adds a job and returns its id. With a unique key already held
// in the queue it returns the holder's id and ErrDuplicate; with Debounce
// it may return the id of the pending job it folded into (EnqueueOne says
// which).
func (q *Queue) Enqueue(ctx context.Context, j NewJob) (int64, error) {
	out, err := q.EnqueueOne(ctx, j)
	return out.ID, err
}

// EnqueueOne is Enqueue, and says what became of the job: added,
// Duplicate (with ErrDuplicate), or Debounced into a pending job (see
// NewJob.Debounce).
func (q *Queue) EnqueueOne(ctx context.Context, j NewJob) (Enqueued, error) {
	return q.interceptedOne(ctx, j, q.enqueue)
}

func (q *Queue) enqueue(ctx context.Context, j NewJob) (Enqueued, error) {
	r, err := q.validate(j)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue %s: %w", r.queue, err)
	}
	if insideAckWrites(ctx) {
		return Enqueued{}, fmt.Errorf("enqueue %s: %w", r.queue, errWriteInsideAck)
	}
	var out Enqueued
	if r.follows.any() || r.uniqueKey.Valid {
		// More than one statement, which stand or fall together: on
		// SQLite a write of the round, in its own savepoint; on a server
		// a transaction of its own.
		err = q.writeTx(ctx, q.sql(insertJobSQL), func(tx txConn) (err error) {
			out, err = q.insertFollowing(ctx, tx, r)
			return err
		})
	} else {
		err = q.write(ctx, q.sql(insertJobSQL), func(c conn) (err error) {
			out, err = q.insert(ctx, c, r) // created_at read once the lock is held
			return err
		})
	}
	if err != nil {
		return out, fmt.Errorf("enqueue %s: %w", r.queue, classify(err))
	}
	q.notify()
	return out, q.afterWrite(ctx, "enqueue "+r.queue)
}

// EnqueueTx adds a job inside the caller's transaction on the same file:
// the job exists if and only if the transaction commits. With a unique
// key already held it returns the holder's id and ErrDuplicate, having
// written nothing, and the transaction stays usable: a held key is found
// by the insert's conflict clause, not by a failing statement, so the
// caller may go on writing and commit. It cannot wait for
// Options.AfterCommit, since the caller commits: call Queue.AfterCommit
// once the transaction has.
func (q *Queue) EnqueueTx(ctx context.Context, tx *sql.Tx, j NewJob) (int64, error) {
	out, err := q.EnqueueOneTx(ctx, tx, j)
	return out.ID, err
}

// EnqueueOneTx is EnqueueTx, and says what became of the job, as
// EnqueueOne does.
func (q *Queue) EnqueueOneTx(ctx context.Context, tx *sql.Tx, j NewJob) (Enqueued, error) {
	return q.interceptedOne(ctx, j, func(ctx context.Context, j NewJob) (Enqueued, error) { return q.enqueueTx(ctx, tx, j) })
}

func (q *Queue) enqueueTx(ctx context.Context, tx *sql.Tx, j NewJob) (Enqueued, error) {
	r, err := q.validate(j)
	if err != nil {
		return Enqueued{}, fmt.Errorf("enqueue %s: %w", r.queue, err)
	}
	var out Enqueued
	insert := func() (err error) {
		out, err = q.insertFollowing(ctx, tx, r)
		return err
	}
	if r.unique.hold.Valid {
		// A key taken and then a failed insert must not stay in the
		// caller's transaction: the key would be held by no job.
		err = inSavepoint(ctx, tx, insert)
	} else {
		err = insert()
	}
	if err != nil {
		return out, fmt.Errorf("enqueue %s: %w", r.queue, classify(err))
	}
	// No wake-up here: the job is visible only once the caller commits,
	// and a worker woken now would wait on the caller's write lock. The
	// commit reaches idle workers as one by another connection, through
	// the WAL watch or the data_version poll.
	return out, nil
}

// Enqueued is the outcome of one job of EnqueueOne, EnqueueBatch and
// EnqueueBatchTx.
type Enqueued struct {
	ID int64
	// Duplicate is true when the job was not added because another job
	// held its unique key; ID is then that job's id.
	Duplicate bool
	// Debounced is true when the job was not added but folded into the
	// pending job holding its unique key (see NewJob.Debounce); ID is
	// then that job's id.
	Debounced bool
}

// EnqueueBatch adds many jobs in one transaction: all of them or, on an
// error, none. A job whose unique key is held is skipped, not an error.
func (q *Queue) EnqueueBatch(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
	return q.intercepted(ctx, jobs, q.enqueueBatch)
}

func (q *Queue) enqueueBatch(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
	rows, err := q.validateBatch(jobs)
	if err != nil {
		return nil, err
	}
	// Prepare outside the transaction: the writer has one connection.
	for _, s := range []stmt{insertJobSQL, insertManySQL} {
		if _, err := q.stmts.prepare(ctx, q.sql(s)); err != nil {
			return nil, fmt.Errorf("enqueue batch: %w", err)
		}
	}
	var out []Enqueued
	err = q.withTx(ctx, func(tx txConn) (err error) {
		out, err = q.insertBatch(ctx, tx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", classify(err))
	}
	q.notify()
	return out, q.afterWrite(ctx, "enqueue batch")
}

// EnqueueBatchTx adds many jobs inside the caller's transaction on the
// same file, as EnqueueBatch does in its own: the jobs exist if and only
// if the transaction commits, and a job whose unique key is held is
// skipped, not an error. Every job is checked before any is written. On an
// error none of the batch is left in the transaction: the batch runs in a
// savepoint that is rolled back when a job fails, and the caller's own
// writes before the call stay, so the caller may go on and commit. An
// error SQLite answers by rolling back the whole transaction (an interrupt
// when ctx ends mid-statement, a full disk) ends the caller's transaction
// too, as it would for any statement of the caller's. As with EnqueueTx,
// call Queue.AfterCommit once the transaction committed.
func (q *Queue) EnqueueBatchTx(ctx context.Context, tx *sql.Tx, jobs []NewJob) ([]Enqueued, error) {
	return q.intercepted(ctx, jobs, func(ctx context.Context, jobs []NewJob) ([]Enqueued, error) {
		return q.enqueueBatchTx(ctx, tx, jobs)
	})
}

func (q *Queue) enqueueBatchTx(ctx context.Context, tx *sql.Tx, jobs []NewJob) ([]Enqueued, error) {
	rows, err := q.validateBatch(jobs)
	if err != nil {
		return nil, err
	}
	var out []Enqueued
	err = inSavepoint(ctx, tx, func() (err error) {
		out, err = q.insertBatch(ctx, tx, rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("enqueue batch: %w", classify(err))
	}
	// No wake-up: see EnqueueTx.
	return out, nil
}

// validateBatch checks every job before any is written, so that bad
// input never starts a transaction.
func (q *Queue) validateBatch(jobs []NewJob) ([]jobRow, error) {
	rows := make([]jobRow, len(jobs))
	for i, j := range jobs {
		r, err := q.validate(j)
		if err != nil {
			return nil, fmt.Errorf("enqueue batch: job %d: %w", i, err)
		}
		rows[i] = r
	}
	return rows, nil
}

// CheckJob says why Enqueue would refuse j, or nil, without touching the
// database: the checks of names, sizes, times, the dependency policy and
// the callback that Enqueue makes before it writes. What only the
// database can say (a job j depends on that does not exist) is left to
// Enqueue, and enqueue middleware does not run. A program that must
// store all of many jobs or none, in more than one transaction, checks
// each first.
func (q *Queue) CheckJob(j NewJob) error {
	_, err := q.validate(j)
	return err
}

// insertFollowing inserts one validated job on c, inside a transaction,
// with what it waits for and calls back.
func (q *Queue) insertFollowing(ctx context.Context, c conn, r jobRow) (Enqueued, error) {
	out, err := q.insert(ctx, c, r)
	if err != nil || out.Debounced || !r.follows.any() {
		return out, err
	}
	return out, q.follow(ctx, c, out.ID, r.follows)
}

// followAll stores, for every job of a batch just inserted, what it waits
// for and calls back.
func (q *Queue) followAll(ctx context.Context, c conn, rows []jobRow, out []Enqueued) error {
	for i, r := range rows {
		if out[i].Duplicate || out[i].Debounced || !r.follows.any() {
			continue
		}
		if err := q.follow(ctx, c, out[i].ID, r.follows); err != nil {
			return batchJobError(ctx, i, err)
		}
	}
	return nil
}

// batchJobError names job i of a batch as the one err failed, unless ctx
// has ended: then the call was cancelled or ran out of time, which is no
// fault of the job it was at, and the error is the context's alone.
func batchJobError(ctx context.Context, i int, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("job %d: %w", i, err)
}

// insertBatch inserts validated jobs in order on c, which is inside a
// transaction that the caller rolls back (or back to a savepoint) on an
// error; a held unique key is an outcome, not an error. A batch without
// unique keys goes in as one statement. If that fails, the jobs go in one
// by one only to name the job that failed: the error is the failure's,
// even when every job then goes in, since an error must mean that nothing
// was written.
func (q *Queue) insertBatch(ctx context.Context, c conn, rows []jobRow) ([]Enqueued, error) {
	out, err := q.insertRows(ctx, c, rows)
	if err != nil {
		return nil, err
	}
	return out, q.followAll(ctx, c, rows, out)
}

func (q *Queue) insertRows(ctx context.Context, c conn, rows []jobRow) ([]Enqueued, error) {
	if len(rows) > 1 && !slices.ContainsFunc(rows, func(r jobRow) bool { return r.uniqueKey.Valid }) {
		out, err := q.insertMany(ctx, c, rows)
		if err == nil {
			return out, nil
		}
		if errors.Is(err, errBulkUndone) {
			if _, named := q.insertEach(ctx, c, rows); named != nil {
				return nil, named
			}
		}
		return nil, err
	}
	return q.insertEach(ctx, c, rows)
}

// insertEach inserts rows one statement each.
func (q *Queue) insertEach(ctx context.Context, c conn, rows []jobRow) ([]Enqueued, error) {
	out := make([]Enqueued, len(rows))
	for i, r := range rows {
		got, err := q.insert(ctx, c, r)
		if err != nil && !got.Duplicate {
			return nil, batchJobError(ctx, i, err)
		}
		out[i] = got
	}
	return out, nil
}

// insertManySQL adds a batch of jobs that hold no unique key in one
// statement, so that what each statement costs (a cursor on every index,
// the AUTOINCREMENT counter, a round trip to a server) is paid once per
// batch rather than once per job: on SQLite that makes a batch three to
// four times faster. The jobs come as one JSON array of
// [queue, kind, payload in hex, priority, run_at, max_attempts, tags,
// meta, key, expires_at, from_now], tags and meta each as their JSON text
// in a string, key and expires_at null for none; a job whose run time
// counts from now (from_now) is due no earlier than its created_at, as
// insertJobSQL's. Both
// engines hand out ids in the order rows are inserted, and the rows are
// inserted in the array's order, so the ids sorted are the jobs' in order.
var insertManySQL = stmt{
	sqlite: `insert into lite_jobs (queue, kind, payload, priority, run_at, max_attempts, created_at, tags, meta, job_key, expires_at)
select value ->> 0, value ->> 1, unhex(value ->> 2), value ->> 3,
       case when value ->> 10 then max(value ->> 4, ?2) else value ->> 4 end, value ->> 5, ?2,
       value ->> 6, value ->> 7, value ->> 8, value ->> 9
from json_each(?1) order by key
returning id`,
	postgres: `insert into lite_jobs (queue, kind, payload, priority, run_at, max_attempts, created_at, tags, meta, job_key, expires_at)
select j ->> 0, j ->> 1, decode(j ->> 2, 'hex'), (j ->> 3)::bigint,
       case when (j ->> 10)::boolean then greatest((j ->> 4)::bigint, $2::bigint) else (j ->> 4)::bigint end, (j ->> 5)::bigint, $2,
       (j ->> 6)::jsonb, (j ->> 7)::jsonb, j ->> 8, (j ->> 9)::bigint
from jsonb_array_elements($1::jsonb) with ordinality as e(j, n) order by n
returning id`,
}

// errBulkUndone says that insertMany failed and took back what it wrote,
// leaving the transaction as it found it.
var errBulkUndone = errors.New("batch insert undone")

// insertMany inserts rows, none of which has a unique key, with
// insertManySQL. It runs under a savepoint: a failing statement aborts a
// PostgreSQL transaction, and the savepoint lets the caller try again job
// by job. If the failure ended the whole transaction (SQLite rolls it back
// on an interrupt or a full disk), the rollback to the savepoint fails
// too and insertMany returns that, not errBulkUndone.
func (q *Queue) insertMany(ctx context.Context, c conn, rows []jobRow) ([]Enqueued, error) {
	if _, err := c.ExecContext(ctx, `savepoint lite_bulk`); err != nil {
		return nil, fmt.Errorf("savepoint: %w", err)
	}
	var ids []int64
	var err error
	for todo := rows; len(todo) > 0 && err == nil; {
		n := bulkChunk(todo)
		ids, err = q.insertManyIDs(ctx, c, todo[:n], ids)
		todo = todo[n:]
	}
	if err == nil && len(ids) != len(rows) {
		err = fmt.Errorf("%d jobs inserted, %d ids returned", len(rows), len(ids))
	}
	cleanup := context.WithoutCancel(ctx)
	if err != nil {
		if _, rerr := c.ExecContext(cleanup, `rollback to lite_bulk`); rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("rollback to savepoint: %w", rerr))
		}
		err = fmt.Errorf("%w: %w", errBulkUndone, err)
	}
	if _, rerr := c.ExecContext(cleanup, `release lite_bulk`); rerr != nil {
		return nil, errors.Join(err, fmt.Errorf("release savepoint: %w", rerr))
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	out := make([]Enqueued, len(rows))
	for i, id := range ids {
		out[i] = Enqueued{ID: id}
	}
	return out, nil
}

// bulkChunkBytes bounds the payload bytes of one insertManySQL: the JSON
// holds each payload twice over in hex, and a batch of large payloads
// should not be held three times in memory at once.
const bulkChunkBytes = 1 << 20

// bulkChunk is how many of rows, at least one, go in one statement.
func bulkChunk(rows []jobRow) int {
	size := 0
	for i, r := range rows {
		size += len(r.payload)
		if size > bulkChunkBytes {
			return max(i, 1)
		}
	}
	return len(rows)
}

// appendKeyAndExpiry appends r's key and expires_at to one job of
// insertManySQL's array, each null for none.
func appendKeyAndExpiry(jobs []byte, r jobRow) []byte {
	jobs = append(jobs, ',')
	if r.key.Valid {
		quoted, _ := json.Marshal(r.key.String) // a valid UTF-8 string always marshals
		jobs = append(jobs, quoted...)
	} else {
		jobs = append(jobs, "null"...)
	}
	jobs = append(jobs, ',')
	if r.expiresAt.Valid {
		return strconv.AppendInt(jobs, r.expiresAt.Int64, 10)
	}
	return append(jobs, "null"...)
}

// insertManyIDs runs insertManySQL on rows and appends every id it
// returns to ids: until its rows are closed, the statement holds SQLite's
// write lock.
func (q *Queue) insertManyIDs(ctx context.Context, c conn, rows []jobRow, ids []int64) ([]int64, error) {
	jobs := []byte{'['}
	for i, r := range rows {
		if i > 0 {
			jobs = append(jobs, ',')
		}
		jobs = append(jobs, '[')
		for _, name := range []string{r.queue, r.kind} {
			quoted, err := json.Marshal(name)
			if err != nil {
				return nil, err
			}
			jobs = append(append(jobs, quoted...), ',')
		}
		jobs = append(jobs, '"')
		jobs = hex.AppendEncode(jobs, r.payload)
		jobs = append(jobs, '"', ',')
		jobs = strconv.AppendInt(jobs, int64(r.priority), 10)
		jobs = append(jobs, ',')
		jobs = strconv.AppendInt(jobs, r.runAt, 10)
		jobs = append(jobs, ',')
		jobs = strconv.AppendInt(jobs, int64(r.maxAttempts), 10)
		for _, text := range []string{orEmpty(r.tags, emptyTags), orEmpty(r.meta, emptyMeta)} {
			quoted, err := json.Marshal(text)
			if err != nil {
				return nil, err
			}
			jobs = append(append(jobs, ','), quoted...)
		}
		jobs = appendKeyAndExpiry(jobs, r)
		jobs = append(jobs, ',')
		jobs = strconv.AppendBool(jobs, r.fromNow)
		jobs = append(jobs, ']')
	}
	jobs = append(jobs, ']')
	res, err := c.QueryContext(ctx, q.sql(insertManySQL), string(jobs), q.nowMillis())
	if err != nil {
		return nil, err
	}
	defer res.Close()
	for res.Next() {
		var id int64
		if err := res.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, res.Err()
}

// inSavepoint runs fn inside a savepoint of the caller's transaction and
// rolls back to it if fn fails, so that a failed call takes back its own
// writes and nothing the caller wrote before it. The rollback runs even
// when ctx has ended, since the statement may have failed because it did.
func inSavepoint(ctx context.Context, tx *sql.Tx, fn func() error) error {
	if _, err := tx.ExecContext(ctx, `savepoint lite_batch`); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	err := fn()
	cleanup := context.WithoutCancel(ctx)
	if err != nil {
		if _, rerr := tx.ExecContext(cleanup, `rollback to lite_batch`); rerr != nil {
			return errors.Join(err, fmt.Errorf("rollback to savepoint: %w", rerr))
		}
	}
	if _, rerr := tx.ExecContext(cleanup, `release lite_batch`); rerr != nil {
		return errors.Join(err, fmt.Errorf("release savepoint: %w", rerr))
	}
	return err
}
