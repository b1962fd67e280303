package cmd

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// enqueueCmd adds one job, or many from a JSON Lines file.
type enqueueCmd struct {
	Queue       string            `short:"q" predictor:"queue" default:"default" help:"Queue to add to."`
	Kind        string            `short:"k" default:"default" help:"Kind of job."`
	Priority    int               `short:"p" help:"Higher runs first."`
	Delay       time.Duration     `help:"Run no sooner than this from now (e.g. 90s, 5m)."`
	At          string            `placeholder:"TIME" help:"Run no sooner than this time: local time as 2026-12-01 21:37 or 2026-12-01 21:37:05, or RFC 3339 (2026-12-01T21:37:05Z, 2026-12-01T21:37:05+01:00)."`
	MaxAttempts int               `help:"Attempts before the job is dead (default 10)."`
	UniqueKey   string            `help:"At most one unfinished job with this key in the queue (see --unique-for, --unique-until, --debounce)."`
	UniqueFor   time.Duration     `placeholder:"D" help:"With --unique-key: hold the key this long after the job is enqueued, whatever becomes of it (e.g. 10m, 1d)."`
	UniqueUntil string            `placeholder:"STATE" help:"With --unique-key: hold the key until the job has started or finished (started, finished), after --unique-for if given."`
	Debounce    time.Duration     `placeholder:"D" help:"With --unique-key: if the job holding the key has not started, give it this payload and run it this long from now instead of adding a job (e.g. 30s); the id printed is that job's."`
	Tag         []string          `help:"Tag the job (repeat, or a,b); lite ls --tag finds it."`
	Meta        map[string]string `mapsep:"none" placeholder:"KEY=VALUE" help:"Metadata the job carries (repeat for more keys; keys starting lite. are lite's own)."`
	After       []int64           `placeholder:"ID" help:"Wait for these jobs (repeat, or 1,2): blocked until they are done."`
	OnDepFail   string            `name:"on-dep-failure" enum:"cancel,run,block" default:"cancel" help:"With --after, when a job waited for ends dead or cancelled: cancel this one, run it anyway, or leave it blocked (cancel, run, block)."`
	Callback    string            `placeholder:"KIND" help:"When this job ends (done, dead or cancelled), enqueue a job of this kind in the same queue, its meta naming the job (lite.job) and how it ended (lite.state)."`
	Key         string            `placeholder:"KEY" help:"Group the job by this key (a customer, a host) for its queue's --per-key limit and --sequence (see lite limit)."`
	ExpiresIn   time.Duration     `placeholder:"D" help:"Cancel the job if it has not started within this long from now (e.g. 10m)."`
	ExpiresAt   string            `placeholder:"TIME" help:"Cancel the job if it has not started by this time, written as for --at."`
	File        string            `type:"path" help:"Enqueue every line of this JSON Lines file; - reads standard input."`
	Batch       string            `placeholder:"KIND" help:"With --file: enqueue the file's jobs as one batch, in one transaction, and when the last of them ends, a job of this kind whose meta counts how they ended (lite.batch, lite.done, lite.dead, lite.cancelled)."`
	Wait        bool              `help:"Wait for the job to finish and print its result instead of its id, with the exit codes of lite wait (see lite wait --help)."`
	Timeout     time.Duration     `help:"With --wait: give up after this long (exit 5); the job goes on."`
	Payload     *string           `arg:"" optional:"" help:"The payload; - reads it from standard input; \"\" is an empty one."`
	replicateFlags

	runAt     time.Time // --at, read by Validate
	expiresAt time.Time // --expires-at, read by Validate
}

// jsonLine is one line of an enqueue file. A string payload is stored as
// its text, any other JSON value as its JSON.
type jsonLine struct {
	Queue       *string           `json:"queue"` // nil: not given, as "" must not pass for it
	Kind        string            `json:"kind"`
	Payload     json.RawMessage   `json:"payload"`
	Priority    int               `json:"priority"`
	Delay       string            `json:"delay"`
	RunAt       *time.Time        `json:"run_at"`       // nil: not given, as year 1 must not pass for
	MaxAttempts *int              `json:"max_attempts"` // nil: not given, as 0 must not pass for
	UniqueKey   string            `json:"unique_key"`
	Tags        []string          `json:"tags"`
	Meta        map[string]string `json:"meta"`
	After       []int64           `json:"after"`
	OnDepFail   string            `json:"on_dep_failure"`
	Callback    string            `json:"callback"`
	Name        string            `json:"name"`
	AfterNames  []string          `json:"after_names"`
	Key         string            `json:"key"`
	ExpiresIn   string            `json:"expires_in"`
	ExpiresAt   string            `json:"expires_at"`
	UniqueFor   string            `json:"unique_for"`
	UniqueUntil string            `json:"unique_until"`
	Debounce    string            `json:"debounce"`
}

// Validate refuses a queue, kind, tag, attempts or key no job can have,
// and reads --at.
func (c *enqueueCmd) Validate(kctx *kong.Context) error {
	if err := cmp.Or(checkNewQueue(c.Queue), checkName("kind", c.Kind), checkTags(c.Tag), checkMaxAttempts(kctx, c.MaxAttempts), checkKey(kctx, c.Key), c.checkFollows(kctx), c.checkUnique(kctx), c.check()); err != nil {
		return err
	}
	if c.At != "" || flagGiven(kctx, "at") { // --at "$WHEN" with WHEN unset is no time, not now
		at, err := parseAt(c.At, time.Local)
		if err != nil {
			return err
		}
		if at.IsZero() { // it would pass for no --at at all and run the job now
			return fmt.Errorf("--at %s is outside 1970-01-01 to 9999-12-31", c.At)
		}
		c.runAt = at
	}
	if flagGiven(kctx, "expires-in") && c.ExpiresIn <= 0 { // 0 would pass for no expiry at all
		return usagef("--expires-in %s is no time: give a positive duration, or leave it out", c.ExpiresIn)
	}
	if c.ExpiresAt != "" || flagGiven(kctx, "expires-at") {
		at, err := parseAt(c.ExpiresAt, time.Local)
		if err != nil {
			return fmt.Errorf("--expires-at: %w", err)
		}
		if at.IsZero() {
			return fmt.Errorf("--expires-at %s is outside 1970-01-01 to 9999-12-31", c.ExpiresAt)
		}
		c.expiresAt = at
	}
	return c.checkExpiry(time.Now())
}

// checkExpiry refuses a job due later than now (after --delay, --at or
// --debounce) that expires by its run time, before the database is opened
// (the library refuses it too).
func (c *enqueueCmd) checkExpiry(now time.Time) error {
	run, expires := cmp.Or(c.runAt, now.Add(c.Delay+c.Debounce)), cmp.Or(c.expiresAt, now.Add(c.ExpiresIn)) // one of Delay and Debounce is 0
	if run.After(now) && (c.ExpiresIn > 0 || !c.expiresAt.IsZero()) && !expires.After(run) {
		return usagef("the job expires at %s, not after it may first run at %s: it could never start",
			expires.UTC().Format(time.RFC3339), run.UTC().Format(time.RFC3339))
	}
	return nil
}

// checkFollows refuses an --after, --callback or --batch that names
// nothing, or that the rest of the call cannot take.
func (c *enqueueCmd) checkFollows(kctx *kong.Context) error {
	if flagGiven(kctx, "after") && len(c.After) == 0 {
		return usagef("--after needs a job id")
	}
	for _, id := range c.After {
		if id <= 0 {
			return usagef("--after %d is not a job id", id)
		}
	}
	if len(c.After) > 0 && c.UniqueKey != "" {
		return usagef("give --after or --unique-key, not both: a job that waits for others cannot have a unique key")
	}
	for _, f := range []struct{ flag, kind string }{{"callback", c.Callback}, {"batch", c.Batch}} {
		if !flagGiven(kctx, f.flag) {
			continue
		}
		if f.kind == "" {
			return usagef("--%s needs a kind", f.flag)
		}
		if err := checkName(f.flag, f.kind); err != nil {
			return err
		}
	}
	if c.Batch != "" && c.File == "" {
		return usagef("--batch needs --file: a batch is the file's jobs")
	}
	return nil
}

// checkUnique refuses --unique-for, --unique-until and --debounce that
// cannot be used as given.
func (c *enqueueCmd) checkUnique(kctx *kong.Context) error {
	given := ""
	for _, flag := range []string{"debounce", "unique-until", "unique-for"} {
		if flagGiven(kctx, flag) {
			given = "--" + flag
		}
	}
	switch {
	case given == "":
		return nil
	case c.File != "":
		return usagef("%s: give it in the file's lines (unique_for, unique_until, debounce), not as a flag with --file", given)
	case c.UniqueKey == "":
		return usagef("%s needs --unique-key", given)
	case c.UniqueFor < 0:
		return usagef("--unique-for %s is negative", c.UniqueFor)
	case c.Debounce < 0:
		return usagef("--debounce %s is negative", c.Debounce)
	case flagGiven(kctx, "unique-for") && c.UniqueFor == 0:
		return usagef("--unique-for 0 holds the key for no time: give a period, or leave it out")
	case flagGiven(kctx, "debounce") && c.Debounce == 0:
		return usagef("--debounce 0 would run the job at once: give a delay, or leave it out")
	case flagGiven(kctx, "debounce") && (c.Delay != 0 || c.At != ""):
		return usagef("give --debounce or --delay or --at, one of them: --debounce sets the run time")
	}
	return checkUniqueUntil("--unique-until", c.UniqueUntil, flagGiven(kctx, "unique-until"))
}

// checkUniqueUntil refuses a unique-until that is not a state lite knows.
func checkUniqueUntil(what, until string, given bool) error {
	switch lite.UniqueUntil(until) {
	case lite.UniqueUntilStarted, lite.UniqueUntilFinished:
		return nil
	case "":
		if !given {
			return nil
		}
	}
	return usagef("%s %q is not started or finished", what, until)
}

// parseAt reads an --at: RFC 3339, or a date and a time of day (with or
// without seconds, a space or a T between) in loc.
func parseAt(s string, loc *time.Location) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04", "2006-01-02 15:04:05", "2006-01-02T15:04", "2006-01-02T15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--at %q is not a time: give a local date and time as 2026-12-01 21:37 or 2026-12-01 21:37:05, or RFC 3339 with its zone as 2026-12-01T21:37:05Z or 2026-12-01T21:37:05+01:00", s)
}

// Run enqueues and prints the new job's id (--json: the job), or with
// --file a count (--json: {"enqueued": N, "duplicates": M}).
//
// With --replicate it replicates the file while it runs, or stands by if
// another process does.
func (c *enqueueCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	log := slog.New(slog.NewTextHandler(quietWriter{env.Stderr}, &slog.HandlerOptions{Level: g.LogLevel}))
	return c.run(g, log, func() error { return c.enqueue(ctx, env, g, q) })
}

func (c *enqueueCmd) enqueue(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if err := c.checkWait(); err != nil {
		return err
	}
	if c.File != "" {
		if c.Payload != nil {
			return usagef("enqueue: give a payload or --file, not both")
		}
		return c.enqueueFile(ctx, env, g, q)
	}
	if c.Delay < 0 {
		return usagef("enqueue: --delay %s is negative", c.Delay)
	}
	if c.Delay > 0 && !c.runAt.IsZero() {
		return usagef("enqueue: give --delay or --at, not both")
	}
	if c.ExpiresIn < 0 {
		return usagef("enqueue: --expires-in %s is negative", c.ExpiresIn)
	}
	if c.ExpiresIn > 0 && !c.expiresAt.IsZero() {
		return usagef("enqueue: give --expires-in or --expires-at, not both")
	}

	payload, err := c.payload(env.Stdin)
	if err != nil {
		return err
	}
	got, err := q.EnqueueOne(ctx, lite.NewJob{Queue: c.Queue, Kind: c.Kind, Payload: payload, Priority: c.Priority,
		RunAt: c.runAt, Delay: c.Delay, MaxAttempts: c.MaxAttempts, UniqueKey: c.UniqueKey, Tags: c.Tag, Meta: c.Meta,
		DependsOn: c.After, OnDependencyFailure: lite.DependencyPolicy(c.OnDepFail), Callback: callback(c.Callback),
		Key: c.Key, ExpiresIn: c.ExpiresIn, ExpiresAt: c.expiresAt,
		UniqueFor: c.UniqueFor, UniqueUntil: lite.UniqueUntil(c.UniqueUntil), Debounce: c.Debounce})
	id := got.ID
	if errors.Is(err, lite.ErrDuplicate) {
		return fmt.Errorf("enqueue: unique key %q is held by job %d", c.UniqueKey, id)
	}
	if err != nil {
		return err
	}
	if got.Debounced {
		fmt.Fprintf(env.Stderr, "enqueue: debounced into job %d, which had not started\n", id)
	}
	if c.Wait {
		return waitAndPrint(ctx, env, g.JSON, q, []int64{id}, c.Timeout)
	}
	if g.JSON {
		j, err := q.Get(ctx, id)
		if err != nil {
			return err
		}
		return writeJSON(env.Stdout, j)
	}
	_, err = fmt.Fprintln(env.Stdout, id)
	return err
}

// payload is the job's payload: the argument, standard input for -, or
// with no argument an empty one, unless standard input is a terminal (or
// another device), whose user may be waiting to type it.
func (c *enqueueCmd) payload(stdin io.Reader) ([]byte, error) {
	switch {
	case c.Payload == nil && isDevice(stdin):
		return nil, usagef(`enqueue: no payload: give it as an argument, - to read it from standard input, or "" for an empty one`)
	case c.Payload == nil:
		return nil, nil
	case *c.Payload == "-":
		payload, err := readCapped(stdin, lite.DefaultMaxPayloadBytes)
		if err != nil {
			return nil, fmt.Errorf("enqueue: payload: %w", err)
		}
		return payload, nil
	}
	return []byte(*c.Payload), nil
}

// isDevice says whether r is a terminal or another device rather than a
// pipe or a file.
func isDevice(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// readCapped reads all of r, failing once it passes limit bytes rather
// than reading an endless stream into memory.
func readCapped(r io.Reader, limit int) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("over %d bytes: %w", limit, lite.ErrTooLarge)
	}
	return b, nil
}

const enqueueBatchSize = 1000

// fileEnqueue is the progress of enqueue --file: the jobs committed so
// far, and the batch being gathered with the file line of each of its jobs.
type fileEnqueue struct {
	name                         string
	added, duplicates, debounced int
	ids                          []int64 // each line's job, in line order
	batch                        []lite.NewJob
	lines                        []int
	// steps are the batch's jobs as steps. A file whose lines name each
	// other (name, after_names), or that makes one batch, goes in whole,
	// as one workflow in one transaction.
	steps    []lite.Step
	workflow bool
}

// fail words an error at where (a line, or a batch's lines) as one line
// that also says what the file left stored: every batch committed before
// it, nothing from the first line of the batch it stopped.
func (f *fileEnqueue) fail(where string, from int, err error) error {
	if len(f.lines) > 0 {
		from = f.lines[0]
	}
	return fmt.Errorf("enqueue --file %s: %s: %w; %s", f.name, where, err, f.stored(from))
}

// stored says what the file left stored when it stopped at line from:
// every batch committed before it, nothing from it on.
func (f *fileEnqueue) stored(from int) string {
	if f.added+f.duplicates == 0 {
		return "nothing was enqueued"
	}
	skipped := ""
	if f.duplicates > 0 {
		skipped = fmt.Sprintf(" (%d duplicates skipped)", f.duplicates)
	}
	return fmt.Sprintf("%d jobs before line %d were enqueued%s, nothing from line %d on", f.added, from, skipped, from)
}

// flush commits the batch in one transaction.
func (f *fileEnqueue) flush(ctx context.Context, q *lite.Queue) error {
	if len(f.batch) == 0 {
		return nil
	}
	got, err := q.EnqueueBatch(ctx, f.batch)
	if err != nil && ctx.Err() != nil && !errors.Is(err, lite.ErrAfterCommit) {
		return interrupted("enqueue --file %s: interrupted; %s", f.name, f.stored(f.lines[0]))
	}
	if err != nil {
		if i, jobErr := culprit(ctx, q, f.batch, err); i >= 0 {
			return f.fail(fmt.Sprintf("line %d", f.lines[i]), 0, jobErr)
		}
		return f.fail(fmt.Sprintf("lines %d-%d", f.lines[0], f.lines[len(f.lines)-1]), 0, err)
	}
	for _, e := range got {
		f.ids = append(f.ids, e.ID)
		switch {
		case e.Duplicate:
			f.duplicates++
		case e.Debounced:
			f.debounced++
		default:
			f.added++
		}
	}
	f.batch, f.lines = f.batch[:0], f.lines[:0]
	return nil
}

// culprit finds the job of a batch that EnqueueBatch refused, which it
// names only by its index in an error's text: it enqueues the jobs one by
// one in a transaction it rolls back, and returns the first that fails,
// with its error. It returns -1 for an error of the database rather than
// of a job (busy, full, cancelled), or one it cannot reproduce.
func culprit(ctx context.Context, q *lite.Queue, batch []lite.NewJob, batchErr error) (int, error) {
	if errors.Is(batchErr, lite.ErrBusy) || errors.Is(batchErr, lite.ErrFull) || ctx.Err() != nil {
		return -1, nil
	}
	tx, err := q.DB().BeginTx(ctx, nil)
	if err != nil {
		return -1, nil
	}
	defer tx.Rollback()
	for i, j := range batch {
		if _, err := q.EnqueueTx(ctx, tx, j); err != nil && !errors.Is(err, lite.ErrDuplicate) {
			return i, err
		}
	}
	return -1, nil
}

// enqueueFile reads the file twice: first to check every line, so that a
// bad line anywhere leaves nothing of the file stored (a usage error),
// then to enqueue it in batches of enqueueBatchSize, each committed on
// its own so that workers keep running while a large file goes in.
func (c *enqueueCmd) enqueueFile(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	in := env.Stdin
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		defer f.Close()
		in = f
	}
	twice, err := readTwice(in)
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	defer twice.close()
	progress := newProgress(env.Stderr, inputSize(in))
	defer progress.done()
	f := &fileEnqueue{name: c.File, ids: []int64{}} // a list, not null, when empty
	err = c.eachLine(twice.first, f, progress, func(line int, step lite.Step) error {
		if err := q.CheckJob(step.Job); err != nil {
			return f.fail(fmt.Sprintf("line %d", line), line, usageError{err})
		}
		return nil
	})
	if err != nil {
		return err
	}
	again, err := twice.again()
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	progress.again()
	err = c.eachLine(again, f, progress, func(line int, step lite.Step) error {
		f.batch, f.lines = append(f.batch, step.Job), append(f.lines, line)
		if step.Name != "" || len(step.After) > 0 {
			f.workflow = true
		}
		f.steps = append(f.steps, step)
		if len(f.batch) < enqueueBatchSize || f.workflow || c.Batch != "" {
			return nil
		}
		f.steps = f.steps[:0]
		if err := f.flush(ctx, q); err != nil {
			return err
		}
		progress.committed(f.added + f.duplicates + f.debounced)
		return nil
	})
	if err != nil {
		return err
	}
	if f.workflow || c.Batch != "" {
		return c.enqueueWorkflow(ctx, env, g, q, f)
	}
	if err := f.flush(ctx, q); err != nil {
		return err
	}
	progress.done()
	if g.JSON {
		return writeJSON(env.Stdout, fileJSON{f.added, f.duplicates, f.debounced, f.ids, nil})
	}
	debounced := ""
	if f.debounced > 0 {
		debounced = fmt.Sprintf(", %d debounced into jobs not yet started", f.debounced)
	}
	_, err = fmt.Fprintf(env.Stdout, "enqueued %d jobs (%d duplicates skipped%s)\n", f.added, f.duplicates, debounced)
	return err
}

// fileJSON is what enqueue --file --json prints, whatever the file holds:
// every field, always. IDs has one id per line, in line order: a
// duplicate's or a debounced line's is the job that holds its key. Batch
// is null without --batch.
type fileJSON struct {
	Enqueued   int     `json:"enqueued"`
	Duplicates int     `json:"duplicates"`
	Debounced  int     `json:"debounced"`
	IDs        []int64 `json:"ids"`
	Batch      *int64  `json:"batch"`
}

// eachLine calls fn with each job of r and the number of its line, and
// words a line that does not read as a job (a usage error) with f.fail.
func (c *enqueueCmd) eachLine(r io.Reader, f *fileEnqueue, progress *progress, fn func(line int, step lite.Step) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 2*lite.DefaultMaxPayloadBytes+4096)
	line := 0
	for sc.Scan() {
		line++
		progress.read(len(sc.Bytes()) + 1)
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		step, err := c.parseLine(text)
		if err != nil {
			return f.fail(fmt.Sprintf("line %d", line), line, usageError{err})
		}
		if err := fn(line, step); err != nil {
			return err
		}
	}
	err := sc.Err()
	if errors.Is(err, bufio.ErrTooLong) {
		err = usageError{err}
	}
	if err != nil {
		return f.fail(fmt.Sprintf("line %d", line+1), line+1, err)
	}
	return nil
}

// twoReadings is an input read twice, from the same offset each time.
type twoReadings struct {
	first io.Reader
	file  *os.File // what the second reading reads, from start
	start int64
	temp  bool // file is a copy of the input, removed by close
}

// readTwice makes in readable twice: a regular file is read again from
// where the first reading starts, anything else (a pipe) is copied as it
// is first read into a temporary file, which the second reading reads.
func readTwice(in io.Reader) (*twoReadings, error) {
	if f, ok := in.(*os.File); ok && inputSize(f) >= 0 {
		start, err := f.Seek(0, io.SeekCurrent)
		return &twoReadings{first: f, file: f, start: start}, err
	}
	tmp, err := os.CreateTemp("", "lite-enqueue-*.jsonl")
	if err != nil {
		return nil, err
	}
	return &twoReadings{first: io.TeeReader(in, tmp), file: tmp, temp: true}, nil
}

// again is the input for its second reading.
func (t *twoReadings) again() (io.Reader, error) {
	if _, err := t.file.Seek(t.start, io.SeekStart); err != nil {
		return nil, err
	}
	return t.file, nil
}

// close removes the copy, if there is one.
func (t *twoReadings) close() {
	if t.temp {
		t.file.Close()
		os.Remove(t.file.Name())
	}
}

// inputSize is the size of a regular file's bytes, or -1 for a pipe or a
// terminal, whose end no one knows.
func inputSize(r io.Reader) int64 {
	if f, ok := r.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			return info.Size()
		}
	}
	return -1
}

// enqueueWorkflow enqueues the whole file as one workflow, with --batch
// its callback, and prints the count and the batch (--json: the ids too).
func (c *enqueueCmd) enqueueWorkflow(ctx context.Context, env Env, g *globals, q *lite.Queue, f *fileEnqueue) error {
	wf := lite.Workflow{Steps: f.steps}
	if c.Batch != "" {
		wf.Batch = &lite.Callback{Kind: c.Batch}
	}
	got, err := q.EnqueueWorkflow(ctx, wf)
	if err != nil && len(f.lines) > 0 {
		return f.fail(fmt.Sprintf("lines %d-%d", f.lines[0], f.lines[len(f.lines)-1]), 0, err)
	}
	if err != nil {
		return fmt.Errorf("enqueue --file %s: %w", f.name, err)
	}
	if g.JSON {
		// A workflow refuses a held unique key: it has no duplicates.
		out := fileJSON{Enqueued: len(got.IDs), IDs: append([]int64{}, got.IDs...)}
		if got.Batch != 0 {
			out.Batch = &got.Batch
		}
		return writeJSON(env.Stdout, out)
	}
	if got.Batch != 0 {
		_, err = fmt.Fprintf(env.Stdout, "enqueued %d jobs in batch %d\n", len(got.IDs), got.Batch)
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "enqueued %d jobs\n", len(got.IDs))
	return err
}

// errNotAnObject is a line that is not a JSON object.
var errNotAnObject = errors.New(`not a JSON object: each line is one job, as {"payload": "hello", "queue": "mail"}`)

// lineFields are the fields a line may have.
const lineFields = "queue, kind, payload, priority, delay, run_at, max_attempts, unique_key, unique_for, unique_until, debounce, tags, meta, after, on_dep_failure, callback, name, after_names, key, expires_in, expires_at"

// lineError words why a line did not decode, for a person fixing the file.
func lineError(err error) error {
	var syntax *json.SyntaxError
	var field *json.UnmarshalTypeError
	var at *time.ParseError
	switch {
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("not valid JSON: %w", err)
	case errors.As(err, &at):
		return fmt.Errorf(`"run_at" %q is not an RFC 3339 time (2026-12-01T21:37:05Z)`, at.Value)
	case strings.HasPrefix(err.Error(), "Time.UnmarshalJSON: "): // run_at not a string
		return errors.New(`"run_at" must be a string, an RFC 3339 time (2026-12-01T21:37:05Z)`)
	case errors.As(err, &field) && field.Field != "" && jsonKind(field.Type.Kind()) == "a whole number" && strings.HasPrefix(field.Value, "number "):
		n := strings.TrimPrefix(field.Value, "number ")
		if strings.ContainsAny(n, ".eE") {
			return fmt.Errorf("%q must be a whole number written in digits (no fraction, no exponent), not %s", field.Field, n)
		}
		return fmt.Errorf("%q %s is out of range", field.Field, n)
	case errors.As(err, &field) && field.Field != "":
		return fmt.Errorf("%q must be %s, not a JSON %s", field.Field, jsonKind(field.Type.Kind()), field.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("%s: a line may have %s", strings.TrimPrefix(err.Error(), "json: "), lineFields)
	}
	return err
}

// jsonKind words what a field of kind k takes.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.String, reflect.Struct: // time.Time reads a string
		return "a string"
	}
	return "any JSON value"
}

// callback is the callback job of kind, in the job's own queue; none for
// an empty kind.
func callback(kind string) *lite.Callback {
	if kind == "" {
		return nil
	}
	return &lite.Callback{Kind: kind}
}

// checkLineTimes refuses a line that gives two times for one thing, or
// a time that would pass for none, in the file's words: the library's
// would name its Go fields.
func checkLineTimes(l jsonLine) error {
	switch {
	case l.Delay != "" && l.RunAt != nil:
		return errors.New(`give "delay" or "run_at", not both`)
	case l.Debounce != "" && (l.Delay != "" || l.RunAt != nil):
		return errors.New(`give "debounce", "delay" or "run_at", one of them: "debounce" sets the run time`)
	case l.ExpiresIn != "" && l.ExpiresAt != "":
		return errors.New(`give "expires_in" or "expires_at", not both`)
	case (l.UniqueFor != "" || l.UniqueUntil != "" || l.Debounce != "") && l.UniqueKey == "":
		return errors.New(`"unique_for", "unique_until" and "debounce" need a "unique_key"`)
	case l.RunAt != nil && l.RunAt.IsZero(): // it would run the job now
		return fmt.Errorf(`"run_at" %s is outside 1970-01-01 to 9999-12-31`, l.RunAt.Format(time.RFC3339))
	}
	return nil
}

// lineExpiry sets j's expiry from its line's expires_in or expires_at,
// or from the flags when the line gives neither.
func (c *enqueueCmd) lineExpiry(j *lite.NewJob, l jsonLine) error {
	switch {
	case l.ExpiresIn != "":
		d, err := parseDuration(l.ExpiresIn)
		if err != nil {
			return fmt.Errorf(`"expires_in" %q is not a duration (90s, 5m, 1h30m, 7d)`, l.ExpiresIn)
		}
		if d == 0 { // it would pass for no expiry at all
			return fmt.Errorf(`"expires_in" %q is no time: give a positive duration, or leave it out`, l.ExpiresIn)
		}
		j.ExpiresIn = d
	case l.ExpiresAt != "":
		at, err := time.Parse(time.RFC3339, l.ExpiresAt)
		if err != nil {
			return fmt.Errorf(`"expires_at" %q is not an RFC 3339 time (2026-12-01T21:37:05Z)`, l.ExpiresAt)
		}
		if at.IsZero() { // it would pass for no expiry at all
			return fmt.Errorf(`"expires_at" %s is outside 1970-01-01 to 9999-12-31`, l.ExpiresAt)
		}
		j.ExpiresAt = at
	default:
		j.ExpiresIn, j.ExpiresAt = c.ExpiresIn, c.expiresAt
	}
	return nil
}

// lineUnique sets j's UniqueUntil from its line, refusing a state lite
// does not know before the database is asked.
func lineUnique(j *lite.NewJob, l jsonLine) error {
	if err := checkUniqueUntil(`"unique_until"`, l.UniqueUntil, l.UniqueUntil != ""); err != nil {
		return errors.Unwrap(err) // a line's error, worded as such, not a usage error
	}
	j.UniqueUntil = lite.UniqueUntil(l.UniqueUntil)
	return nil
}

// parseLine reads one JSON line; flags give the defaults for what it
// leaves out.
func (c *enqueueCmd) parseLine(text []byte) (lite.Step, error) {
	var l jsonLine
	if !bytes.HasPrefix(text, []byte("{")) {
		return lite.Step{}, errNotAnObject
	}
	if !utf8.Valid(text) { // JSON is UTF-8: a decoder would turn other bytes into U+FFFD
		return lite.Step{}, errors.New("the line is not valid UTF-8")
	}
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return lite.Step{}, lineError(err)
	}
	if dec.More() {
		return lite.Step{}, errors.New("text after the job's JSON object: give one object per line")
	}
	j, err := c.lineJob(l)
	return lite.Step{Name: l.Name, Job: j, After: l.AfterNames}, err
}

// lineJob is the job a line describes.
func (c *enqueueCmd) lineJob(l jsonLine) (lite.NewJob, error) {
	if err := checkLineTimes(l); err != nil {
		return lite.NewJob{}, err
	}
	j := lite.NewJob{Queue: c.Queue, Kind: l.Kind, Priority: l.Priority, RunAt: *cmp.Or(l.RunAt, &time.Time{}),
		MaxAttempts: c.MaxAttempts, UniqueKey: l.UniqueKey, Tags: l.Tags, Meta: l.Meta,
		DependsOn: l.After, OnDependencyFailure: lite.DependencyPolicy(l.OnDepFail), Callback: callback(l.Callback),
		Key: cmp.Or(l.Key, c.Key)}
	if err := c.lineExpiry(&j, l); err != nil {
		return j, err
	}
	if l.Queue != nil {
		if *l.Queue == "" {
			return j, errors.New(`"queue" is empty: give a queue's name, or leave it out for --queue's`)
		}
		j.Queue = *l.Queue
	}
	if j.Kind == "" {
		j.Kind = c.Kind
	}
	if l.MaxAttempts != nil {
		switch {
		case *l.MaxAttempts == 0:
			return j, errors.New(`"max_attempts" 0 would never run the job: give at least 1, or leave it out`)
		case *l.MaxAttempts < 0:
			return j, fmt.Errorf(`"max_attempts" %d is negative: give at least 1, or leave it out`, *l.MaxAttempts)
		}
		j.MaxAttempts = *l.MaxAttempts
	}
	if j.Tags == nil {
		j.Tags = c.Tag
	}
	if j.Meta == nil {
		j.Meta = c.Meta
	}
	if err := lineUnique(&j, l); err != nil {
		return j, err
	}
	for _, f := range []struct {
		name, text string
		d          *time.Duration
	}{{"delay", l.Delay, &j.Delay}, {"unique_for", l.UniqueFor, &j.UniqueFor}, {"debounce", l.Debounce, &j.Debounce}} {
		if f.text == "" {
			continue
		}
		d, err := parseDuration(f.text)
		if err != nil {
			return j, fmt.Errorf(`%q %q is not a duration (90s, 5m, 1h30m, 7d)`, f.name, f.text)
		}
		if d == 0 && f.d != &j.Delay {
			return j, fmt.Errorf(`%q %q is no time: give a positive duration, or leave it out`, f.name, f.text)
		}
		*f.d = d
	}
	var s string
	switch {
	case len(l.Payload) == 0 || string(l.Payload) == "null":
	case json.Unmarshal(l.Payload, &s) == nil:
		j.Payload = []byte(s)
	default:
		j.Payload = []byte(l.Payload)
	}
	return j, nil
}
