package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/liteq/lite/lite"
)

// EnqueueCmd adds one job, or many from a JSON Lines file.
type EnqueueCmd struct {
	Queue       string        `short:"q" default:"default" help:"Queue to add to."`
	Kind        string        `short:"k" default:"default" help:"Kind of job."`
	Priority    int           `short:"p" help:"Higher runs first."`
	Delay       time.Duration `help:"Run no sooner than this from now (e.g. 90s, 5m)."`
	At          time.Time     `help:"Run no sooner than this time (RFC 3339)." format:"2006-01-02T15:04:05Z07:00"`
	MaxAttempts int           `help:"Attempts before the job is dead (default 10)."`
	UniqueKey   string        `help:"At most one unfinished job with this key in the queue."`
	File        string        `type:"path" help:"Enqueue every line of this JSON Lines file; - reads standard input."`
	Payload     string        `arg:"" optional:"" help:"The payload; - reads it from standard input."`
}

// jsonLine is one line of an enqueue file. A string payload is stored as
// its text, any other JSON value as its JSON.
type jsonLine struct {
	Queue       string          `json:"queue"`
	Kind        string          `json:"kind"`
	Payload     json.RawMessage `json:"payload"`
	Priority    int             `json:"priority"`
	Delay       string          `json:"delay"`
	RunAt       time.Time       `json:"run_at"`
	MaxAttempts int             `json:"max_attempts"`
	UniqueKey   string          `json:"unique_key"`
}

// Run enqueues and prints the new job's id (or, with --file, a count).
func (c *EnqueueCmd) Run(ctx context.Context, env Env, g *Globals, q *lite.Queue) error {
	if c.File != "" {
		if c.Payload != "" {
			return usagef("enqueue: give a payload or --file, not both")
		}
		return c.enqueueFile(ctx, env, q)
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
		RunAt: c.At, Delay: c.Delay, MaxAttempts: c.MaxAttempts, UniqueKey: c.UniqueKey})
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
		return writeJSON(env.Stdout, toJSON(j))
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

func (c *EnqueueCmd) enqueueFile(ctx context.Context, env Env, q *lite.Queue) error {
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
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 2*lite.DefaultMaxPayloadBytes+4096)
	var batch []lite.NewJob
	var added, duplicates, line int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		got, err := q.EnqueueBatch(ctx, batch)
		if err != nil {
			return fmt.Errorf("enqueue %s: lines %d-%d: %w", c.File, line-len(batch)+1, line, err)
		}
		for _, e := range got {
			if e.Duplicate {
				duplicates++
			} else {
				added++
			}
		}
		batch = batch[:0]
		progress.show(added + duplicates)
		return nil
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		j, err := c.parseLine([]byte(text))
		if err != nil {
			return fmt.Errorf("enqueue %s: line %d: %w (nothing after line %d was enqueued)", c.File, line, err, line-len(batch)-1)
		}
		if batch = append(batch, j); len(batch) == enqueueBatchSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("enqueue %s: line %d: %w", c.File, line+1, err)
	}
	if err := flush(); err != nil {
		return err
	}
	progress.done()
	_, err := fmt.Fprintf(env.Stdout, "enqueued %d jobs (%d duplicates skipped)\n", added, duplicates)
	return err
}

// parseLine reads one JSON line; flags give the defaults for what it
// leaves out.
func (c *EnqueueCmd) parseLine(text []byte) (lite.NewJob, error) {
	var l jsonLine
	dec := json.NewDecoder(strings.NewReader(string(text)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return lite.NewJob{}, err
	}
	j := lite.NewJob{Queue: l.Queue, Kind: l.Kind, Priority: l.Priority, RunAt: l.RunAt,
		MaxAttempts: l.MaxAttempts, UniqueKey: l.UniqueKey}
	if j.Queue == "" {
		j.Queue = c.Queue
	}
	if j.Kind == "" {
		j.Kind = c.Kind
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = c.MaxAttempts
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
