package lite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The bounds of what a job keeps of its steps (see RunStep): a handler that
// records steps in a loop cannot grow the file without end.
const (
	MaxSteps         = 1000     // steps one job may record, its sleeps' and signals' included
	MaxStepsBytes    = 16 << 20 // bytes of results one job's steps may hold together
	MaxStepNameBytes = 200
)

// ErrStepsFull refuses a step past a job's MaxSteps or MaxStepsBytes:
// nothing was recorded.
var ErrStepsFull = errors.New("the job's steps are full")

// reservedStep begins the names of the records lite keeps for sleeps and
// signals among a job's steps; a step of the handler's may not use it.
const reservedStep = "lite:"

// durableKey holds a handler's *durable in its context.
type durableKey struct{}

// durable is what RunStep, Sleep and AwaitSignal need of the run that calls
// them: its queue and lease, a way to stop the handler once the lease is
// found lost, how many sleeps and awaits the run has made so far, which
// identify them by their position (see Sleep), and the job's records.
type durable struct {
	q     *Queue
	lease Lease
	lost  context.CancelCauseFunc
	// emit reports the run's steps and signals as its worker's events
	// (see EventStep); nil outside a worker.
	emit func(Event)
	// fenced is set for a process that acts for a run it is not (a
	// command of lite work): it keeps no records, and each lookup reads
	// whether the lease still holds with the record (see LeaseStep).
	fenced bool
	job    *Job
	mu     sync.Mutex
	calls  map[string]int
	// records holds the job's step records, read at the run's first
	// lookup (nil until then) and added to as the run records: while its
	// lease holds, only this run can record a step of the job, so a name
	// missing here has no record, and a step costs no read before its fn.
	records map[string][]byte
	// fresh is when records last held every record of the job: when they
	// were read, or when a record of the run's own committed, which shows
	// that no newer attempt could have recorded before it. A lookup
	// recheckAfter past it reads the name's record again (see recorded).
	fresh time.Time
}

// recheckAfter is how long a run trusts that a name missing from its
// records has none, by the queue's clock (one stepped back trusts
// nothing). A newer attempt records a step only once this run's lease is
// lost: by a reclaim, after a silence of the run's StaleAfter (a process
// frozen, a machine asleep: time that passes here too), or by a release
// or a cancel, which the lease watch reports to the handler within
// moments by cancelling its context (checked at every lookup).
const recheckAfter = time.Second

func newDurable(q *Queue, l Lease, lost context.CancelCauseFunc) *durable {
	return &durable{q: q, lease: l, lost: lost, calls: map[string]int{}}
}

func withDurable(ctx context.Context, d *durable) context.Context {
	return context.WithValue(ctx, durableKey{}, d)
}

func durableOf(ctx context.Context) (*durable, error) {
	d, ok := ctx.Value(durableKey{}).(*durable)
	if !ok {
		return nil, ErrNotRunning
	}
	return d, nil
}

// next names the run's next call of what: "what#1", then "what#2".
func (d *durable) next(what string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[what]++
	return fmt.Sprintf("%s%s#%d", reservedStep, what, d.calls[what])
}

// recorded returns the job's record under name, and whether there is one,
// reading every record of the job the first time, and name's again when
// the records were fresh more than recheckAfter ago. A handler whose
// context ended (its lease lost, its timeout) gets the reason: it must
// not go on to run a step's fn.
func (d *durable) recorded(ctx context.Context, name string) ([]byte, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, lossOr(ctx, context.Cause(ctx))
	}
	if d.fenced {
		return d.q.LeaseStep(ctx, d.lease, name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.records == nil {
		read := d.q.opts.Now()
		var steps []StepRecord
		// Generation 1 is a job's first lease: no run before it recorded
		// anything, and its records are read for nothing (a restore
		// raises the generation of every job it brings back).
		if d.lease.Generation > 1 {
			var err error
			if steps, err = d.q.Steps(ctx, d.lease.JobID); err != nil {
				return nil, false, lossOr(ctx, err)
			}
		}
		d.records = make(map[string][]byte, len(steps))
		for _, s := range steps {
			d.records[s.Name] = s.Result
		}
		d.fresh = read
	}
	if b, ok := d.records[name]; ok || d.trusted() {
		return b, ok, nil
	}
	s, ok, err := d.q.stepOn(ctx, d.q.r, d.lease.JobID, name)
	if err != nil || !ok {
		return nil, false, lossOr(ctx, err)
	}
	d.records[name] = s.Result
	return s.Result, true, nil
}

// trusted says whether the records were whole less than recheckAfter ago.
func (d *durable) trusted() bool {
	age := d.q.opts.Now().Sub(d.fresh)
	return age >= 0 && age < recheckAfter
}

// remember adds the record the job holds under name after an owner write
// of the run's that began at since: one that committed shows the lease
// held, so that no newer attempt recorded anything before it.
func (d *durable) remember(name string, b []byte, since time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.records != nil {
		d.records[name] = b
	}
	if since.After(d.fresh) {
		d.fresh = since
	}
}

// record is recordStep for the run: what the job holds under name
// afterwards, remembered, and whether it is result.
func (d *durable) record(ctx context.Context, name string, result []byte) ([]byte, bool, error) {
	start := d.q.opts.Now()
	b, inserted, err := d.q.recordStep(ctx, d.lease, name, result)
	if err != nil {
		return nil, false, d.failed(lossOr(ctx, err))
	}
	d.remember(name, b, start)
	return b, inserted, nil
}

// report emits an event of kind for the run's job, in a worker.
func (d *durable) report(kind EventKind) {
	if d.emit != nil {
		d.emit(Event{Kind: kind, JobID: d.lease.JobID, Job: d.job, Generation: d.lease.Generation, State: StateRunning})
	}
}

// failed stops the handler when err says its lease is lost, as a
// heartbeat that finds it lost does, and returns err.
func (d *durable) failed(err error) error {
	var lost *LeaseLostError
	if errors.As(err, &lost) {
		d.lost(lost)
	}
	return err
}

// lossOr is the handler's lost lease when ctx ended because of it, else
// err: fn's own error then says only that its context was cancelled
// (its writes cut short, on a server, by the loss), and the caller was
// promised ErrLeaseLost.
func lossOr(ctx context.Context, err error) error {
	var lost *LeaseLostError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &lost) {
		return lost
	}
	return err
}

// CheckStepName refuses a step name that is empty, too long, lite's own,
// or not text (UTF-8 with no NUL): RunStep and RecordStep refuse it, and
// `lite step` before it runs anything.
func CheckStepName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("step: %w: an empty name", ErrInvalid)
	case len(name) > MaxStepNameBytes:
		return fmt.Errorf("step: %w: a name of %d bytes (at most %d)", ErrInvalid, len(name), MaxStepNameBytes)
	case strings.HasPrefix(name, reservedStep):
		return fmt.Errorf("step %q: %w: names beginning %q are lite's own", name, ErrInvalid, reservedStep)
	case !isText(name):
		return fmt.Errorf("step %q: %w: %s", name, ErrInvalid, notText)
	}
	return nil
}

// notText says why isText refused a name.
const notText = "a name is text: UTF-8, with no NUL"

// isText says whether name can be a step's or a signal's name on both
// engines: PostgreSQL's text holds UTF-8 with no NUL, and a round's list
// of steps (JSON) would turn any other byte into U+FFFD, recording the
// step under a name it was not asked for.
func isText(name string) bool {
	return utf8.ValidString(name) && !strings.ContainsRune(name, 0)
}

// StepRecord is one recorded step of a job: what `lite show` lists.
type StepRecord struct {
	Name       string
	Generation int64 // the lease that recorded it
	Result     []byte
	RecordedAt time.Time
}

// stepJSON is a StepRecord in a job's JSON, its result as a job's is.
type stepJSON struct {
	Name         string    `json:"name"`
	Generation   int64     `json:"generation"`
	Result       *string   `json:"result,omitempty"`
	ResultBase64 []byte    `json:"result_base64,omitempty"`
	RecordedAt   time.Time `json:"recorded_at"`
}

// MarshalJSON writes the step as `lite show --json` lists it.
func (s StepRecord) MarshalJSON() ([]byte, error) {
	out := stepJSON{Name: s.Name, Generation: s.Generation, RecordedAt: s.RecordedAt.UTC()}
	out.Result, out.ResultBase64 = textOrBase64(s.Result)
	return json.Marshal(out)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (s *StepRecord) UnmarshalJSON(b []byte) error {
	var in stepJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	result, err := fromTextOrBase64("result", in.Result, in.ResultBase64)
	*s = StepRecord{Name: in.Name, Generation: in.Generation, Result: result, RecordedAt: in.RecordedAt.UTC()}
	return err
}

var stepSQL = stmt{
	sqlite:   `select generation, result, recorded_at from lite_steps where job_id = ? and name = ?`,
	postgres: `select generation, result, recorded_at from lite_steps where job_id = $1 and name = $2`,
}

// StepResult returns the result job id recorded under name, and whether
// it recorded one: what a later attempt, or `lite step`, reads back.
func (q *Queue) StepResult(ctx context.Context, id int64, name string) ([]byte, bool, error) {
	s, ok, err := q.stepOn(ctx, q.r, id, name)
	return s.Result, ok, err
}

func (q *Queue) stepOn(ctx context.Context, c queryer, id int64, name string) (StepRecord, bool, error) {
	s := StepRecord{Name: name}
	var at int64
	err := c.QueryRowContext(ctx, q.sql(stepSQL), id, name).Scan(&s.Generation, &s.Result, &at)
	s.RecordedAt, s.Result = fromMillis(at), nonNil(s.Result)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return s, false, nil
	case err != nil:
		return s, false, fmt.Errorf("read step %q of job %d: %w", name, id, classify(err))
	}
	return s, true, nil
}

// nonNil is b, or an empty result for none: a record always has a result,
// which SQLite's driver reads back as nil when it is empty, and
// PostgreSQL's as empty.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// leaseStepSQL reads whether lease (id, generation) still holds its job,
// and the job's record under name, in one read.
var leaseStepSQL = stmt{
	sqlite: `select j.generation = ?2 and j.state = 'running', s.job_id is not null, coalesce(s.result, x'')
from lite_jobs j left join lite_steps s on s.job_id = j.id and s.name = ?3 where j.id = ?1`,
	postgres: `select j.generation = $2 and j.state = 'running', s.job_id is not null, coalesce(s.result, ''::bytea)
from lite_jobs j left join lite_steps s on s.job_id = j.id and s.name = $3 where j.id = $1`,
}

// LeaseStep returns the record of step name of lease l's job, and whether
// it has one, for a process that runs the step for the lease (`lite
// step`): once l no longer holds its job it returns a *LeaseLostError
// (ErrLeaseLost) instead, record or not, and the step must not run. A
// lease lost after this read is the record's to refuse (RecordStep).
func (q *Queue) LeaseStep(ctx context.Context, l Lease, name string) ([]byte, bool, error) {
	var held, ok bool
	var result []byte
	err := q.r.QueryRowContext(ctx, q.sql(leaseStepSQL), l.JobID, l.Generation, name).Scan(&held, &ok, &result)
	switch {
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return nil, false, fmt.Errorf("read step %q of job %d: %w", name, l.JobID, classify(err))
	case !held: // the job gone too
		return nil, false, q.lossOf(ctx, l)
	}
	return nonNil(result), ok, nil
}

var stepsSQL = stmt{
	sqlite:   `select name, generation, result, recorded_at from lite_steps where job_id = ? order by recorded_at, name`,
	postgres: `select name, generation, result, recorded_at from lite_steps where job_id = $1 order by recorded_at, name`,
}

// Steps lists the steps job id recorded, oldest first, its sleeps' and
// signals' records (named "lite:...") among them.
func (q *Queue) Steps(ctx context.Context, id int64) ([]StepRecord, error) {
	rows, err := q.r.QueryContext(ctx, q.sql(stepsSQL), id)
	if err != nil {
		return nil, fmt.Errorf("steps of job %d: %w", id, classify(err))
	}
	defer rows.Close()
	var steps []StepRecord
	for rows.Next() {
		var s StepRecord
		var at int64
		if err := rows.Scan(&s.Name, &s.Generation, &s.Result, &at); err != nil {
			return nil, fmt.Errorf("steps of job %d: %w", id, err)
		}
		s.RecordedAt, s.Result = fromMillis(at), nonNil(s.Result)
		steps = append(steps, s)
	}
	return steps, rows.Err()
}

// recordStepSQL records a step under the lease, within the job's bounds
// (counted in one pass over the job's records, on PostgreSQL once the row
// is locked: migration 0024); a step already recorded is kept as it is
// (never overwritten). On PostgreSQL it locks the job's row for the rest
// of its transaction, as an owner's update would: a reclaim, a release or
// a cancel that comes while the record commits waits for it, then finds
// the lease ended. An insert that only read the row did so in its
// snapshot, and its record could land after the lease it names had
// ended. On SQLite the file's write lock orders them.
var recordStepSQL = stmt{
	sqlite: `insert into lite_steps (job_id, name, generation, result, recorded_at)
select id, ?1, generation, ?2, ?3 from lite_jobs
where id = ?4 and generation = ?5 and state = 'running'
  and (select count(*) < ` + fmt.Sprint(MaxSteps) + ` and coalesce(sum(length(result)), 0) + length(?2) <= ` + fmt.Sprint(MaxStepsBytes) + `
    from lite_steps where job_id = ?4)
on conflict (job_id, name) do nothing`,
	postgres: `with owner as (select id, generation from lite_jobs
    where id = $4 and generation = $5 and state = 'running'
    for no key update)
insert into lite_steps (job_id, name, generation, result, recorded_at)
select id, $1, generation, $2::bytea, $3 from owner
where lite_steps_room(owner.id, octet_length($2::bytea), ` + fmt.Sprint(MaxSteps) + `, ` + fmt.Sprint(MaxStepsBytes) + `)
on conflict (job_id, name) do nothing`,
}

// recordStepsSQL is recordStepSQL for a list of steps (see stepRound),
// each entry [job id, generation, name, result in hex], of distinct jobs:
// the bounds count each job's records as they were before the statement.
// It returns each step it recorded, by its place in the list. SQLite
// alone: its writes go in rounds.
var recordStepsSQL = stmt{
	sqlite: `insert into lite_steps (job_id, name, generation, result, recorded_at)
select j.id, s.value ->> 2, j.generation, unhex(s.value ->> 3), ?1
from json_each(?2) as s join lite_jobs as j on j.id = s.value ->> 0
where j.generation = s.value ->> 1 and j.state = 'running'
  and (select count(*) < ` + fmt.Sprint(MaxSteps) + ` and coalesce(sum(length(result)), 0) + length(s.value ->> 3) / 2 <= ` + fmt.Sprint(MaxStepsBytes) + `
    from lite_steps where job_id = j.id)
on conflict (job_id, name) do nothing
returning job_id`,
}

// stepWrite is a step's record as a round writes it: under lease, result
// as name; what the job holds under name once it is written, and whether
// that is result, which this write recorded.
type stepWrite struct {
	lease    Lease
	name     string
	result   []byte
	stored   []byte
	inserted bool
}

// recordStepsOn writes steps of distinct jobs with recordStepsSQL on c,
// and says which it recorded.
func (q *Queue) recordStepsOn(ctx context.Context, c conn, steps []*stepWrite) ([]bool, error) {
	list := make([][4]any, len(steps))
	at := make(map[int64]int, len(steps))
	for i, s := range steps {
		list[i] = [4]any{s.lease.JobID, s.lease.Generation, s.name, hex.EncodeToString(s.result)}
		at[s.lease.JobID] = i
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	rows, err := c.QueryContext(ctx, q.sql(recordStepsSQL), q.nowOn(c).UnixMilli(), string(b))
	if err != nil {
		return nil, err
	}
	recorded := make([]bool, len(steps))
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		recorded[at[id]] = true
	}
	return recorded, errors.Join(rows.Err(), rows.Close())
}

var ownsSQL = stmt{
	sqlite:   `select count(*) from lite_jobs where id = ? and generation = ? and state = 'running'`,
	postgres: `select count(*) from lite_jobs where id = $1 and generation = $2 and state = 'running'`,
}

// recordStepOn records result under name for lease l, on c (a write's
// connection or transaction), and returns what the job holds under name
// afterwards: result, or the record an earlier call made, which wins
// (inserted is false then: the caller's other writes in c duplicate
// that call's and must roll back). With the lease lost it returns
// ErrLeaseLost, past the bounds ErrStepsFull; nothing is written then.
func (q *Queue) recordStepOn(ctx context.Context, c conn, l Lease, name string, result []byte) (stored []byte, inserted bool, err error) {
	if result == nil {
		result = []byte{} // the column holds no null
	}
	res, err := c.ExecContext(ctx, q.sql(recordStepSQL), name, result, q.nowOn(c).UnixMilli(), l.JobID, l.Generation)
	if err != nil {
		return nil, false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return result, err == nil, err
	}
	if err := q.stillOwned(ctx, c, l); err != nil {
		return nil, false, err
	}
	s, ok, err := q.stepOn(ctx, c, l.JobID, name)
	switch {
	case err != nil:
		return nil, false, err
	case ok:
		return s.Result, false, nil
	}
	return nil, false, fmt.Errorf("step %q of job %d: %w (at most %d steps and %d bytes)", name, l.JobID, ErrStepsFull, MaxSteps, MaxStepsBytes)
}

// recordedBefore rolls back a transaction whose step another call
// recorded first (see recordStepOn): its writes are that call's again.
// The record is what the caller gets.
type recordedBefore struct{ record []byte }

func (recordedBefore) Error() string { return "the step was recorded by another call" }

// keptRecord is the record err carries when the transaction rolled back
// for recordedBefore, with ok true; else err as it is.
func keptRecord(err error) (record []byte, ok bool, rest error) {
	var r recordedBefore
	if errors.As(err, &r) {
		return r.record, true, nil
	}
	return nil, false, err
}

// RecordStep records result as job l's step name, under lease l, unless
// the job recorded that step already: it returns what the job holds under
// name afterwards, and never overwrites a record. A lease that is no
// longer current gets a *LeaseLostError (ErrLeaseLost) and writes
// nothing. It is what RunStep does for a handler, for a process that does
// not hold the lease itself (`lite step`).
func (q *Queue) RecordStep(ctx context.Context, l Lease, name string, result []byte) ([]byte, error) {
	if err := CheckStepName(name); err != nil {
		return nil, err
	}
	stored, _, err := q.recordStep(ctx, l, name, result)
	if err != nil {
		return nil, err
	}
	return stored, q.afterWrite(ctx, "record step")
}

func (q *Queue) recordStep(ctx context.Context, l Lease, name string, result []byte) (stored []byte, inserted bool, err error) {
	if len(result) > q.opts.MaxPayloadBytes {
		return nil, false, fmt.Errorf("step %q of job %d: result of %d bytes: %w (limit %d)", name, l.JobID, len(result), ErrTooLarge, q.opts.MaxPayloadBytes)
	}
	if result == nil {
		result = []byte{} // the column holds no null
	}
	s := &stepWrite{lease: l, name: name, result: result}
	err = q.writeItem(q.sql(recordStepSQL), &roundItem{ctx: ctx, step: s, fn: func(c conn) (err error) {
		s.stored, s.inserted, err = q.recordStepOn(ctx, c, l, name, result)
		return err
	}})
	if err != nil {
		return nil, false, fmt.Errorf("record step %q: %w", name, q.explainLoss(ctx, classify(err), l))
	}
	return s.stored, s.inserted, nil
}
