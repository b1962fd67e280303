package web

import (
	"context"
	"slices"

	"github.com/liteq/lite/lite"
)

// jobAction is an admin action on one job. The API serves each at
// POST api/jobs/{id}/{Name}, the pages at POST jobs/{id}/{Name} after a
// confirmation page: a new action is one more entry here.
type jobAction struct {
	Name    string // its URL segment
	Title   string // its button
	Confirm string // the question the confirmation page asks
	// States are those a job must be in for the action to apply; the
	// job's page offers it then only.
	States []lite.State
	do     func(ctx context.Context, q *lite.Queue, id int64) error
}

// Applies reports whether a's button belongs on j's page.
func (a jobAction) Applies(j *lite.Job) bool { return slices.Contains(a.States, j.State) }

var jobActions = []jobAction{
	{
		Name: "retry", Title: "Retry",
		Confirm: "Start this job over: it becomes available now, with all its attempts again.",
		States:  []lite.State{lite.StateDead, lite.StateCancelled},
		do:      func(ctx context.Context, q *lite.Queue, id int64) error { return q.Retry(ctx, id) },
	},
	{
		Name: "cancel", Title: "Cancel",
		Confirm: "Cancel this job: it never runs, or its running lease is voided and its worker told to stop.",
		States:  []lite.State{lite.StateBlocked, lite.StateAvailable, lite.StateRunning},
		do:      func(ctx context.Context, q *lite.Queue, id int64) error { return q.Cancel(ctx, id) },
	},
	{
		Name: "release", Title: "Release",
		Confirm: "Make this running job available again now, voiding its lease even if its worker is healthy.",
		States:  []lite.State{lite.StateRunning},
		do: func(ctx context.Context, q *lite.Queue, id int64) error {
			_, err := q.ReleaseUnowned(ctx, id)
			return err
		},
	},
}

// findJobAction is the action named name.
func findJobAction(name string) (jobAction, bool) {
	i := slices.IndexFunc(jobActions, func(a jobAction) bool { return a.Name == name })
	if i < 0 {
		return jobAction{}, false
	}
	return jobActions[i], true
}
