package cmd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/liteq/lite/lite"
)

// showCmd prints one job.
type showCmd struct {
	ID    int64 `arg:"" help:"The job's id."`
	Graph bool  `help:"Show instead every job connected to this one through dependencies, both ways, with its state: a row per job, each after the jobs it waits for."`
}

// Run prints every field of the job, or the job as JSON with --json.
func (c *showCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	if c.Graph {
		return c.graph(ctx, env, g, q)
	}
	j, err := q.Get(ctx, c.ID)
	if err != nil {
		return jobError("show", c.ID, err)
	}
	links, err := q.Links(ctx, c.ID)
	if err != nil {
		return err
	}
	if g.JSON {
		out, err := withLinks(j, links)
		if err != nil {
			return err
		}
		return writeJSON(env.Stdout, out)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "%s:\t%v\n", k, v) }
	row("id", j.ID)
	row("queue", safe(j.Queue))
	row("kind", safe(j.Kind))
	row("state", safe(string(j.State)))
	row("priority", j.Priority)
	row("attempts", fmt.Sprintf("%d of %d", j.Attempts, j.MaxAttempts))
	row("generation", j.Generation)
	row("run at", stamp(j.RunAt, now))
	row("created at", stamp(j.CreatedAt, now))
	row("leased at", stamp(j.LeasedAt, now))
	row("heartbeat", stamp(j.HeartbeatAt, now))
	row("locked by", orDash(j.LockedBy))
	row("lease token", orDash(j.LeaseToken))
	row("finished at", stamp(j.FinishedAt, now))
	row("unique key", orDash(j.UniqueKey))
	row("key", orDash(j.Key))
	row("expires at", stamp(j.ExpiresAt, now))
	row("tags", orDash(strings.Join(j.Tags, ",")))
	for _, k := range slices.Sorted(maps.Keys(j.Meta)) {
		row("meta "+safe(k), safe(j.Meta[k]))
	}
	row("payload", printable(j.Payload))
	row("result", printable(j.Result))
	progress := progressText(j)
	if j.ProgressNote != "" {
		progress += " " + safe(j.ProgressNote)
	}
	row("progress", progress)
	if j.Parked != "" {
		row("parked", parkedText(j))
	}
	switch {
	case len(links.WaitsFor) > 0 && j.Parked == lite.ParkedAwait:
		// An await counts any end and cancels nothing: its policy is not the await's.
		row("waits for", fmt.Sprintf("%s (%d not ended; awaited: any end counts)", related(links.WaitsFor), links.Pending))
	case len(links.WaitsFor) > 0:
		row("waits for", fmt.Sprintf("%s (%d not done; if one fails: %s)", related(links.WaitsFor), links.Pending, links.Policy))
	}
	if len(links.WaitedBy) > 0 {
		row("waited for by", related(links.WaitedBy))
	}
	if links.Batch != 0 {
		row("batch", links.Batch)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(j.Log) > 0 {
		fmt.Fprintf(env.Stdout, "log, the last %d lines:\n", len(j.Log))
		for _, line := range j.Log {
			fmt.Fprintf(env.Stdout, "  %s\n", safe(line))
		}
	}
	for _, s := range j.Steps {
		fmt.Fprintf(env.Stdout, "step %s (generation %d) at %s: %s\n",
			safe(s.Name), s.Generation, s.RecordedAt.UTC().Format(time.RFC3339), preview(s.Result))
	}
	for _, e := range j.Errors {
		fmt.Fprintf(env.Stdout, "error, attempt %d (generation %d) at %s:\n",
			e.Attempt, e.Generation, e.At.Format(time.RFC3339))
		// A command's stderr keeps its lines; each is escaped on its own.
		for line := range strings.SplitSeq(e.Error, "\n") {
			fmt.Fprintf(env.Stdout, "  %s\n", safe(line))
		}
	}
	return nil
}

// linksJSON is what show --json adds to the job's JSON form, as the text
// form shows it: each only when the job has it.
type linksJSON struct {
	WaitsFor    []depJSON             `json:"waits_for,omitempty"`
	DepsPending int                   `json:"deps_pending,omitempty"`
	Policy      lite.DependencyPolicy `json:"on_dep_failure,omitempty"`
	WaitedBy    []depJSON             `json:"waited_for_by,omitempty"`
	Batch       int64                 `json:"batch,omitempty"`
}

type depJSON struct {
	ID    int64      `json:"id"`
	Kind  string     `json:"kind"`
	State lite.State `json:"state"`
}

// withLinks is j's JSON form (Job.MarshalJSON, which an application
// serving a Job gives too) followed by its links.
func withLinks(j *lite.Job, l lite.Links) (json.RawMessage, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	deps := func(ds []lite.Dependency) []depJSON {
		out := make([]depJSON, len(ds))
		for i, d := range ds {
			out[i] = depJSON{d.ID, d.Kind, d.State}
		}
		return out
	}
	lj := linksJSON{WaitsFor: deps(l.WaitsFor), WaitedBy: deps(l.WaitedBy), Batch: l.Batch}
	if len(l.WaitsFor) > 0 {
		lj.DepsPending, lj.Policy = l.Pending, l.Policy
	}
	extra, err := json.Marshal(lj)
	if err != nil || string(extra) == "{}" {
		return b, err
	}
	return append(append(b[:len(b)-1], ','), extra[1:]...), nil
}

func stamp(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	age := now.Sub(t).Round(time.Millisecond)
	if age >= 0 {
		return fmt.Sprintf("%s (%s ago)", t.Format(time.RFC3339), age)
	}
	return fmt.Sprintf("%s (in %s)", t.Format(time.RFC3339), -age)
}

// orDash is s, escaped by safe, or - for nothing.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return safe(s)
}

// printable is a payload or result: always quoted, with the same escapes
// as safe, since it is data rather than a name.
func printable(b []byte) string {
	switch {
	case b == nil:
		return "-"
	case utf8.Valid(b):
		return strconv.Quote(string(b))
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

// parkedText says what a parked job waits for.
func parkedText(j *lite.Job) string {
	switch j.Parked {
	case lite.ParkedSignal:
		return "awaiting signal " + safe(j.ParkedOn)
	case lite.ParkedAwait:
		return "awaiting the jobs it waits for"
	}
	return safe(j.Parked)
}

// stepPreview is how much of a step's result show prints.
const stepPreview = 80

// preview is a step's result as printable quotes it, cut to stepPreview
// bytes first.
func preview(b []byte) string {
	if len(b) <= stepPreview {
		return printable(b)
	}
	cut := stepPreview
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return printable(b[:cut]) + fmt.Sprintf("… (%d bytes)", len(b))
}

// related lists jobs as "7 (done), 8 (running)".
func related(deps []lite.Dependency) string {
	parts := make([]string, len(deps))
	for i, d := range deps {
		parts[i] = fmt.Sprintf("%d (%s)", d.ID, safe(string(d.State)))
	}
	return strings.Join(parts, ", ")
}

// graph prints the job's graph: a row per job by layer, a job marked *
// has edges to jobs the limit left out; or the graph as JSON with --json.
func (c *showCmd) graph(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	gr, err := q.Graph(ctx, c.ID, 0)
	if err != nil {
		return jobError("show", c.ID, err)
	}
	if g.JSON {
		return writeJSON(env.Stdout, gr)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLAYER\tSTATE\tQUEUE\tKIND\tWAITS FOR")
	for _, j := range gr.Jobs {
		id := strconv.FormatInt(j.ID, 10)
		if j.More {
			id += "*"
		}
		waits := make([]string, len(j.WaitsFor))
		for i, dep := range j.WaitsFor {
			waits[i] = strconv.FormatInt(dep, 10)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", id, j.Layer, safe(string(j.State)), safe(j.Queue), safe(j.Kind), orDash(strings.Join(waits, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if gr.Truncated {
		_, err = fmt.Fprintf(env.Stdout, "graph truncated at the %d jobs nearest job %d: those marked * wait for, or are waited for by, jobs left out\n",
			len(gr.Jobs), c.ID)
	}
	return err
}
