package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// scheduleCmd manages periodic jobs: schedules stored in the queue, which
// every running `lite work` fires.
type scheduleCmd struct {
	Add    scheduleAddCmd    `cmd:"" help:"Add a schedule, or replace the one of the same name."`
	Ls     scheduleLsCmd     `cmd:"" help:"List schedules."`
	Rm     scheduleRmCmd     `cmd:"" help:"Remove a schedule; the jobs it enqueued stay."`
	Pause  schedulePauseCmd  `cmd:"" help:"Stop a schedule firing until it is resumed."`
	Resume scheduleResumeCmd `cmd:"" help:"Let a paused schedule fire again from its next tick."`
}

// scheduleAddCmd adds or replaces a schedule.
type scheduleAddCmd struct {
	Name        string `arg:"" help:"The schedule's name."`
	Spec        string `arg:"" help:"When it fires: five cron fields (\"30 6 * * 1-5\"), or @hourly, @daily, @weekly, @monthly, @every 5m."`
	Kind        string `short:"k" required:"" help:"Kind of job each tick enqueues."`
	Queue       string `short:"q" predictor:"queue" default:"default" help:"Queue each job goes to."`
	Payload     string `help:"Each job's payload."`
	PayloadFile string `name:"payload-file" type:"path" help:"Read each job's payload from this file; - reads standard input."`
	TZ          string `name:"tz" help:"IANA time zone the spec's times are in (Europe/Berlin); default UTC."`
	Priority    int    `short:"p" help:"Higher runs first."`
	MaxAttempts int    `help:"Attempts before a job is dead (default 10)."`
	UniqueKey   string `help:"Skip a tick while a job holds this key in the queue (until it is finished, or as it asked): runs never overlap."`
}

// Validate refuses a queue, kind or attempts no job can have.
func (c *scheduleAddCmd) Validate(kctx *kong.Context) error {
	return cmp.Or(checkNewQueue(c.Queue), checkName("kind", c.Kind), checkMaxAttempts(kctx, c.MaxAttempts))
}

// Run stores the schedule and prints its next run (--json: the schedule).
// Registering the same spec and zone again keeps the next run.
func (c *scheduleAddCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	payload := []byte(c.Payload)
	switch {
	case c.PayloadFile != "" && c.Payload != "":
		return usagef("schedule add: give --payload or --payload-file, not both")
	case c.PayloadFile == "-":
		var err error
		if payload, err = readCapped(env.Stdin, lite.DefaultMaxPayloadBytes); err != nil {
			return fmt.Errorf("schedule add: payload: %w", err)
		}
	case c.PayloadFile != "":
		f, err := os.Open(c.PayloadFile)
		if err != nil {
			return fmt.Errorf("schedule add: %w", err)
		}
		defer f.Close()
		if payload, err = readCapped(f, lite.DefaultMaxPayloadBytes); err != nil {
			return fmt.Errorf("schedule add: payload: %w", err)
		}
	}
	err := q.SetSchedule(ctx, lite.Schedule{Name: c.Name, Spec: c.Spec, TimeZone: c.TZ,
		Job: lite.NewJob{Queue: c.Queue, Kind: c.Kind, Payload: payload, Priority: c.Priority,
			MaxAttempts: c.MaxAttempts, UniqueKey: c.UniqueKey}})
	if err != nil {
		return err
	}
	s, err := findSchedule(ctx, q, c.Name)
	if err != nil {
		return err
	}
	if g.JSON {
		return writeJSON(env.Stdout, s)
	}
	_, err = fmt.Fprintf(env.Stdout, "schedule %s: next run %s\n", safe(s.Name), s.NextRunAt.UTC().Format(time.RFC3339))
	return err
}

// findSchedule reads one schedule back by name.
func findSchedule(ctx context.Context, q *lite.Queue, name string) (lite.Schedule, error) {
	all, err := q.Schedules(ctx)
	if err != nil {
		return lite.Schedule{}, err
	}
	for _, s := range all {
		if s.Name == name {
			return s, nil
		}
	}
	// Removed by another process since it was set.
	return lite.Schedule{}, fmt.Errorf("schedule %s: %w", name, lite.ErrNoSchedule)
}

// scheduleLsCmd lists schedules.
type scheduleLsCmd struct{}

// Run prints the schedules as a table, or as JSON with --json. Times are
// in UTC; OWNER is hand, or code:OWNER for a program's Declaration.
func (c *scheduleLsCmd) Run(ctx context.Context, env Env, g *globals, q *lite.Queue) error {
	all, err := q.Schedules(ctx)
	if err != nil {
		return err
	}
	if g.JSON {
		if all == nil {
			all = []lite.Schedule{} // none: a list, not null
		}
		return writeJSON(env.Stdout, all)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSPEC\tTIME ZONE\tQUEUE\tKIND\tSTATE\tNEXT RUN\tLAST RUN\tOWNER")
	for _, s := range all {
		zone, state, last := s.TimeZone, "active", "-"
		if zone == "" {
			zone = "UTC"
		}
		if s.Paused {
			state = "paused"
		}
		if !s.LastRunAt.IsZero() {
			last = s.LastRunAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safe(s.Name), safe(s.Spec), safe(zone), safe(s.Job.Queue),
			safe(s.Job.Kind), state, s.NextRunAt.UTC().Format(time.RFC3339), last, ownerLabel(s.Owner))
	}
	return tw.Flush()
}

// scheduleRmCmd removes a schedule.
type scheduleRmCmd struct {
	Name string `arg:"" help:"The schedule's name."`
}

// Run removes the schedule; the jobs it enqueued stay.
func (c *scheduleRmCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	return scheduleChanged(env, c.Name, "removed", q.RemoveSchedule(ctx, c.Name))
}

// schedulePauseCmd pauses a schedule.
type schedulePauseCmd struct {
	Name string `arg:"" help:"The schedule's name."`
}

// Run pauses the schedule: it fires nothing until resumed.
func (c *schedulePauseCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	return scheduleChanged(env, c.Name, "paused", q.PauseSchedule(ctx, c.Name))
}

// scheduleResumeCmd resumes a schedule.
type scheduleResumeCmd struct {
	Name string `arg:"" help:"The schedule's name."`
}

// Run resumes the schedule from its first tick after now; the ticks it
// missed while paused are skipped.
func (c *scheduleResumeCmd) Run(ctx context.Context, env Env, q *lite.Queue) error {
	return scheduleChanged(env, c.Name, "resumed", q.ResumeSchedule(ctx, c.Name))
}

// scheduleChanged reports a change of one schedule by name.
func scheduleChanged(env Env, name, done string, err error) error {
	if errors.Is(err, lite.ErrNoSchedule) {
		return fmt.Errorf("no schedule named %q", name)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(env.Stdout, "schedule %s %s\n", safe(name), done)
	return err
}
