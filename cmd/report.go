package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
)

// leaseLostExitCode is the exit status of `lite progress` and `lite log`
// when the run that calls them no longer holds its job: the command
// should stop, since its ack would be refused too.
const leaseLostExitCode = 3

// reportFlush is how often `lite log` reading stdin writes what it read.
const reportFlush = time.Second

// progressCmd reports a running job's progress from its command.
type progressCmd struct {
	Value string `arg:"" help:"A percentage (40%), a fraction from 0 to 1 (0.4), or a JSON value of at most 4 KiB."`
	Note  string `arg:"" optional:"" help:"A short message shown with it."`
}

// logCmd appends lines to a running job's log.
type logCmd struct {
	Lines []string `arg:"" optional:"" help:"The lines to append; with none, each line of stdin."`
}

// reportHelp is the help both commands share.
const reportHelp = `Run by a command of lite work, for the job it runs: the job comes from LITE_JOB_ID and LITE_JOB_GENERATION, the database from LITE_DB, which lite work sets. Each write is matched to the run's lease: once the job is no longer this run's (cancelled, released, reclaimed), it is refused, nothing is written, and lite exits 3. A job keeps its latest 64 KiB of log, of which show prints the last 100 lines; a line is cut at 1 KiB.`

func (c *progressCmd) Help() string { return reportHelp }
func (c *logCmd) Help() string      { return reportHelp }

// Run writes the progress under the run's lease.
func (c *progressCmd) Run(ctx context.Context, q *lite.Queue) error {
	l, err := runLease()
	if err != nil {
		return err
	}
	value, err := progressValue(c.Value)
	if err != nil {
		return usagef("progress: %v", err)
	}
	return report(ctx, q, l, lite.Update{Progress: value, Note: c.Note})
}

// Run appends the lines, or with none each line of stdin, written once a
// second and at its end: a chatty command costs a write a second, not
// one a line.
func (c *logCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	l, err := runLease()
	if err != nil {
		return err
	}
	if len(c.Lines) > 0 {
		return report(ctx, q, l, lite.Update{Lines: c.Lines})
	}
	lines := make(chan string)
	read := make(chan error, 1)
	go func() { read <- readLines(env.Stdin, lines) }()
	tick := time.NewTicker(reportFlush)
	defer tick.Stop()
	var batch []string
	for {
		select {
		case line, ok := <-lines:
			if ok {
				batch = append(batch, line)
				continue
			}
			if err := report(ctx, q, l, lite.Update{Lines: batch}); err != nil {
				return err
			}
			return <-read
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
			if len(batch) > 0 {
				if err := report(ctx, q, l, lite.Update{Lines: batch}); err != nil {
					return err
				}
				batch = nil
			}
		}
	}
}

// readLines sends each line of r, cut at lite.MaxLogLine bytes without
// holding a longer one whole, and closes lines at the end.
func readLines(r io.Reader, lines chan<- string) error {
	defer close(lines)
	br := bufio.NewReaderSize(r, lite.MaxLogLine)
	for {
		line, err := br.ReadSlice('\n')
		text := string(line)
		for errors.Is(err, bufio.ErrBufferFull) { // the rest of a long line goes
			_, err = br.ReadSlice('\n')
		}
		if text != "" {
			lines <- strings.TrimSuffix(text, "\n")
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("log: read stdin: %w", err)
		}
	}
}

func report(ctx context.Context, q *lite.Queue, l lite.Lease, u lite.Update) error {
	if u.Progress == nil && len(u.Lines) == 0 {
		return nil
	}
	err := q.Report(ctx, l, u)
	if errors.Is(err, lite.ErrLeaseLost) {
		return exitError{code: leaseLostExitCode, err: fmt.Errorf(
			"job %d: this run (generation %d) no longer holds the job, so nothing was written; stop the command: %w",
			l.JobID, l.Generation, err)}
	}
	return err
}

// runLease is the lease of the run lite work started this command for.
func runLease() (lite.Lease, error) {
	id, err := strconv.ParseInt(os.Getenv("LITE_JOB_ID"), 10, 64)
	if err != nil {
		return lite.Lease{}, usagef("LITE_JOB_ID is not a job id: run this from a command of lite work")
	}
	gen, err := strconv.ParseInt(os.Getenv("LITE_JOB_GENERATION"), 10, 64)
	if err != nil {
		return lite.Lease{}, usagef("LITE_JOB_GENERATION is not a generation: run this from a command of lite work")
	}
	return lite.Lease{JobID: id, Generation: gen}, nil
}

// progressValue reads 40% or 0.4 as a fraction, anything else as JSON. A
// number out of a float's range (1e400) is a number too, and no fraction,
// not JSON to store as it is.
func progressValue(s string) (json.RawMessage, error) {
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("%s is not a percentage", safe(s))
		}
		return fraction(s, f/100)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		return fraction(s, f)
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("%s is neither a percentage, a fraction nor JSON", safe(s))
	}
	return json.RawMessage(s), nil
}

// fraction is f, read from s, as a fraction, or why it is none.
func fraction(s string, f float64) (json.RawMessage, error) {
	v, err := lite.Fraction(f)
	if err != nil {
		return nil, fmt.Errorf("%s is out of range: a fraction is from 0 to 1, a percentage from 0%% to 100%%", safe(s))
	}
	return v, nil
}

// progressText is a job's progress for a table: a fraction as a
// percentage, another value as its JSON, escaped and cut short.
func progressText(j *lite.Job) string {
	if j.Progress == nil {
		return "-"
	}
	if pct, ok := j.Percent(); ok {
		return strconv.FormatFloat(pct, 'f', -1, 64) + "%"
	}
	s := string(j.Progress)
	if utf8.RuneCountInString(s) > 24 {
		s = string([]rune(s)[:23]) + "…"
	}
	return safe(s)
}
