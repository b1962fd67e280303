package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/liteq/lite/lite"
)

// declareCmd makes the database hold a program's declaration, read from
// a JSON file: what a deploy script or a program in another language
// owns, as a Go program's Queue.Declare does.
type declareCmd struct {
	File  string `arg:"" type:"path" help:"The declaration, as JSON (- reads standard input): {\"owner\": \"billing-app\", \"schedules\": [...], \"retention\": {\"done\": \"36h\"}, \"limits\": {\"mail\": {\"max_running\": 5, \"rate\": \"50/1s\"}}}."`
	Force bool   `help:"Overwrite what was set by hand or by another owner, and make it the declaration's."`
}

// declaration is a Declaration's JSON form: schedules as `lite schedule
// ls --json` prints them, retentions and rates as `lite retention` and
// `lite limit` take them.
type declaration struct {
	Owner     string          `json:"owner"`
	Schedules []lite.Schedule `json:"schedules"`
	Retention struct {
		Done      string `json:"done"`
		Cancelled string `json:"cancelled"`
		Dead      string `json:"dead"`
	} `json:"retention"`
	Limits map[string]struct {
		MaxRunning int    `json:"max_running"`
		Rate       rate   `json:"rate"`
		PerKey     int    `json:"max_running_per_key"`
		Sequence   string `json:"sequence"`
	} `json:"limits"`
	Force bool `json:"force"`
}

// Run declares the file's settings and prints what it wrote, removed,
// held and found unchanged (--json: {"written": [...], "removed": [...],
// "held": [...], "unchanged": [...]}).
func (c *declareCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	d, err := c.read(env)
	if err != nil {
		return err
	}
	out, err := q.Declare(ctx, d)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, struct {
			Written   []string `json:"written"`
			Removed   []string `json:"removed"`
			Held      []string `json:"held"`
			Unchanged []string `json:"unchanged"`
		}{orEmpty(out.Written), orEmpty(out.Removed), orEmpty(out.Held), orEmpty(out.Unchanged)})
	}
	for _, l := range []struct {
		done, why string
		what      []string
	}{{"wrote", "", out.Written}, {"removed", "", out.Removed}, {"held", ": set by hand or by another owner; --force takes it", out.Held}, {"unchanged", "", out.Unchanged}} {
		for _, what := range l.what {
			if _, err := fmt.Fprintf(env.Stdout, "%s %s%s\n", l.done, safe(what), l.why); err != nil {
				return err
			}
		}
	}
	return nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// read parses the declaration file; a bad one is a usage error.
func (c *declareCmd) read(env Env) (lite.Declaration, error) {
	var r io.Reader = env.Stdin
	if c.File != "-" {
		f, err := os.Open(c.File)
		if err != nil {
			return lite.Declaration{}, fmt.Errorf("declare: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := readCapped(r, 1<<20)
	if err != nil {
		return lite.Declaration{}, fmt.Errorf("declare: %w", err)
	}
	var in declaration
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return lite.Declaration{}, usagef("declare: %s: %s", safe(c.File), safe(err.Error()))
	}
	if _, err := dec.Token(); err != io.EOF {
		return lite.Declaration{}, usagef("declare: %s: more after the declaration's one JSON object", safe(c.File))
	}
	d := lite.Declaration{Owner: in.Owner, Schedules: in.Schedules, Force: in.Force || c.Force, Limits: map[string]lite.Limits{}}
	keep := in.Retention
	if err := setKeeps(&d.Retention, keep.Done, keep.Cancelled, keep.Dead); err != nil {
		return lite.Declaration{}, usagef("declare: retention %s", err)
	}
	for queue, l := range in.Limits {
		for _, f := range []struct {
			name string
			n    int
		}{{"max_running", l.MaxRunning}, {"max_running_per_key", l.PerKey}} {
			if f.n < 0 { // in the file's words: the library's name its Go fields
				return lite.Declaration{}, usagef("declare: limits of %s: %q %d is negative; 0 lifts the limit", safe(queue), f.name, f.n)
			}
		}
		d.Limits[queue] = lite.Limits{MaxRunning: l.MaxRunning, Rate: l.Rate.n, Per: l.Rate.per,
			MaxRunningPerKey: l.PerKey, Sequence: lite.Sequence(l.Sequence)}
	}
	return d, nil
}
