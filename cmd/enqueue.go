package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// enqueueCmd adds one job, or many from a JSON Lines file.
type enqueueCmd struct {
	Queue       string            `short:"q" default:"default" help:"Queue to add to."`
	Kind        string            `short:"k" default:"default" help:"Kind of job."`
	Priority    int               `short:"p" help:"Higher runs first."`
	Delay       time.Duration     `help:"Run no sooner than this from now (e.g. 90s, 5m)."`
	At          time.Time         `help:"Run no sooner than this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	MaxAttempts int               `help:"Attempts before the job is dead (default 10)."`
	UniqueKey   string            `help:"At most one unfinished job with this key in the queue."`
	Tag         []string          `help:"Tag the job (repeat, or a,b); lite ls --tag finds it."`
	Meta        map[string]string `mapsep:"none" placeholder:"KEY=VALUE" help:"Metadata the job carries (repeat for more keys)."`
	File        string            `type:"path" help:"Enqueue every line of this JSON Lines file; - reads standard input."`
	Payload     string            `arg:"" optional:"" help:"The payload; - reads it from standard input."`
}

// jsonLine is one line of an enqueue file. A string payload is stored as
// its text, any other JSON value as its JSON.
type jsonLine struct {
	Queue       string            `json:"queue"`
	Kind        string            `json:"kind"`
	Payload     json.RawMessage   `json:"payload"`
	Priority    int               `json:"priority"`
	Delay       string            `json:"delay"`
	RunAt       time.Time         `json:"run_at"`
	MaxAttempts int               `json:"max_attempts"`
	UniqueKey   string            `json:"unique_key"`
	Tags        []string          `json:"tags"`
	Meta        map[string]string `json:"meta"`
}

// Run enqueues and prints the new job's id (--json: the job), or with
// --file a count (--json: {"enqueued": N, "duplicates": M}).
// Validate refuses an --at of the zero time, which would pass for no --at
// at all and run the job now; the library refuses every other time before
// 1970.
func (c *enqueueCmd) Validate(kctx *kong.Context) error {
	given := slices.ContainsFunc(kctx.Args, func(a string) bool { return a == "--at" || strings.HasPrefix(a, "--at=") })
	if given && c.At.IsZero() {
		return fmt.Errorf("--at %s is outside 1970-01-01 to 9999-12-31", c.At.Format(time.RFC3339))
	}
	return nil
}

func (c *enqueueCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.File != "" {
		if c.Payload != "" {
			return usagef("enqueue: give a payload or --file, not both")
		}
		return c.enqueueFile(ctx, env, g, q)
	}
	if c.Delay < 0 {
		return usagef("enqueue: --delay %s is negative", c.Delay)
	}
	if c.Delay > 0 && !c.At.IsZero() {
		return usagef("enqueue: give --delay or --at, not both")
	}

	payload := []byte(c.Payload)
	if c.Payload == "-" {
		var err error
		if payload, err = readCapped(env.Stdin, lite.DefaultMaxPayloadBytes); err != nil {
			return fmt.Errorf("enqueue: payload: %w", err)
		}
	}
	id, err := q.Enqueue(ctx, lite.NewJob{Queue: c.Queue, Kind: c.Kind, Payload: payload, Priority: c.Priority,
		RunAt: c.At, Delay: c.Delay, MaxAttempts: c.MaxAttempts, UniqueKey: c.UniqueKey, Tags: c.Tag, Meta: c.Meta})
	if errors.Is(err, lite.ErrDuplicate) {
		return fmt.Errorf("enqueue: unique key %q is held by job %d", c.UniqueKey, id)
	}
	if err != nil {
		return err
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
	name              string
	added, duplicates int
	batch             []lite.NewJob
	lines             []int
}

// fail words an error at where (a line, or a batch's lines) as one line
// that also says what the file left stored: every batch committed before
// it, nothing from the first line of the batch it stopped.
func (f *fileEnqueue) fail(where string, from int, err error) error {
	if len(f.lines) > 0 {
		from = f.lines[0]
	}
	stored := "nothing was enqueued"
	if f.added+f.duplicates > 0 {
		skipped := ""
		if f.duplicates > 0 {
			skipped = fmt.Sprintf(" (%d duplicates skipped)", f.duplicates)
		}
		stored = fmt.Sprintf("%d jobs before line %d were enqueued%s, nothing from line %d on", f.added, from, skipped, from)
	}
	return fmt.Errorf("enqueue --file %s: %s: %w; %s", f.name, where, err, stored)
}

// flush commits the batch in one transaction.
func (f *fileEnqueue) flush(ctx context.Context, q *lite.Queue) error {
	if len(f.batch) == 0 {
		return nil
	}
	got, err := q.EnqueueBatch(ctx, f.batch)
	if err != nil {
		if i, jobErr := culprit(ctx, q, f.batch, err); i >= 0 {
			return f.fail(fmt.Sprintf("line %d", f.lines[i]), 0, jobErr)
		}
		return f.fail(fmt.Sprintf("lines %d-%d", f.lines[0], f.lines[len(f.lines)-1]), 0, err)
	}
	for _, e := range got {
		if e.Duplicate {
			f.duplicates++
		} else {
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
	progress := newProgress(env.Stderr)
	defer progress.done()
	f := &fileEnqueue{name: c.File}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 2*lite.DefaultMaxPayloadBytes+4096)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		j, err := c.parseLine([]byte(text))
		if err != nil {
			return f.fail(fmt.Sprintf("line %d", line), line, err)
		}
		f.batch, f.lines = append(f.batch, j), append(f.lines, line)
		if len(f.batch) == enqueueBatchSize {
			if err := f.flush(ctx, q); err != nil {
				return err
			}
			progress.show(f.added + f.duplicates)
		}
	}
	if err := sc.Err(); err != nil {
		return f.fail(fmt.Sprintf("line %d", line+1), line+1, err)
	}
	if err := f.flush(ctx, q); err != nil {
		return err
	}
	progress.done()
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Enqueued   int `json:"enqueued"`
			Duplicates int `json:"duplicates"`
		}{f.added, f.duplicates})
	}
	_, err := fmt.Fprintf(env.Stdout, "enqueued %d jobs (%d duplicates skipped)\n", f.added, f.duplicates)
	return err
}

// parseLine reads one JSON line; flags give the defaults for what it
// leaves out.
func (c *enqueueCmd) parseLine(text []byte) (lite.NewJob, error) {
	var l jsonLine
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return lite.NewJob{}, err
	}
	j := lite.NewJob{Queue: l.Queue, Kind: l.Kind, Priority: l.Priority, RunAt: l.RunAt,
		MaxAttempts: l.MaxAttempts, UniqueKey: l.UniqueKey, Tags: l.Tags, Meta: l.Meta}
	if j.Queue == "" {
		j.Queue = c.Queue
	}
	if j.Kind == "" {
		j.Kind = c.Kind
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = c.MaxAttempts
	}
	if j.Tags == nil {
		j.Tags = c.Tag
	}
	if j.Meta == nil {
		j.Meta = c.Meta
	}
	if l.Delay != "" {
		d, err := time.ParseDuration(l.Delay)
		if err != nil {
			return j, fmt.Errorf("delay: %w", err)
		}
		j.Delay = d
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
