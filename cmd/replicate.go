package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/replicate"
)

// replicateFlags ship the file off the box while lite work (or lite
// serve with a command, or lite enqueue) runs.
type replicateFlags struct {
	Replicate      replicaURL `placeholder:"URL" help:"Replicate the file as it changes (Litestream) to URL: file:///path (a directory, such as a NAS mount) or sftp://user@host:port/path?key=KEY_FILE&host-key=HOST_KEY_FILE. One process replicates a file at a time; the others stand by and take over. Give it to every process on the file: Litestream then owns its checkpoints."`
	ReplicateEvery interval   `default:"1s" help:"With --replicate, how often new commits are shipped: about what losing the box loses."`
	WaitForReplica bool       `help:"With --replicate, an enqueue (a workflow too), a job's outcome or a change made from lite serve's dashboard or API (cancel, retry, release, run now, bulk, purge) returns only once its commit is on the replica (asking the process that replicates the file), so that losing the box loses none of them: a ship per commit, or per group of acks."`

	r *replicate.Replicator // while the command replicates
}

// replicates reports whether the command replicates the file: then
// Litestream owns its checkpoints.
func (r *root) replicates(command string) bool {
	f := r.replicateFlags(command)
	return f != nil && f.Replicate != ""
}

// replicateFlags are the command's, or nil for a command without them.
func (r *root) replicateFlags(command string) *replicateFlags {
	switch command {
	case "work":
		return &r.Work.replicateFlags
	case "serve":
		return &r.Serve.replicateFlags
	case "enqueue":
		return &r.Enqueue.replicateFlags
	}
	return nil
}

// afterCommit is the queue's lite.Options.AfterCommit for the command:
// with --wait-for-replica, a wait for the replica.
func (r *root) afterCommit(command string) func(context.Context) error {
	f := r.replicateFlags(command)
	if f == nil || !f.WaitForReplica {
		return nil
	}
	return func(ctx context.Context) error { return f.r.Sync(ctx) }
}

// check refuses --wait-for-replica without --replicate.
func (c *replicateFlags) check() error {
	if c.WaitForReplica && c.Replicate == "" {
		return usagef("--wait-for-replica waits for the replica --replicate URL ships: give both")
	}
	return nil
}

// run runs fn (the worker, the enqueue), replicating the file while it
// runs if asked; the last commits are shipped before it returns.
func (c *replicateFlags) run(g *globals, log *slog.Logger, fn func() error) error {
	if c.Replicate == "" {
		return fn()
	}
	r, err := replicate.Start(g.DB, string(c.Replicate), replicate.Options{SyncInterval: time.Duration(c.ReplicateEvery), Logger: slog.New(atLeast{log.Handler(), slog.LevelWarn})})
	if err != nil {
		return err
	}
	c.r = r
	err = fn()
	return errors.Join(err, r.Close())
}

// replicaURL is a replica URL, refused as the command line is read if
// lite cannot replicate to it.
type replicaURL string

func (u *replicaURL) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("url", &s); err != nil {
		return err
	}
	if err := replicate.CheckURL(s); err != nil {
		return err
	}
	*u = replicaURL(s)
	return nil
}

// interval is a duration over zero.
type interval time.Duration

func (d *interval) Decode(ctx *kong.DecodeContext) error {
	var s string
	if err := ctx.Scan.PopValueInto("duration", &s); err != nil {
		return err
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("must be more than 0s, not %s", v)
	}
	*d = interval(v)
	return nil
}

// replicaFlags restore from a replica that --replicate ships.
type replicaFlags struct {
	From      replicaURL `placeholder:"URL" help:"Restore the replica lite work --replicate URL ships, its latest state (or that of --timestamp), to --db."`
	Timestamp time.Time  `placeholder:"TIME" help:"With --from, restore the replica as it was at TIME (RFC 3339: 2026-12-01T22:30:00Z)."`
}

func (c *replicaFlags) fromReplica(ctx context.Context, db string, opts lite.RestoreOptions) (lite.FenceReport, error) {
	return replicate.Restore(ctx, string(c.From), db, replicate.RestoreOptions{Timestamp: c.Timestamp, Restore: opts})
}

// atLeast passes on only records at min or above: Litestream's info
// lines (each compaction, each snapshot) would drown the worker's.
type atLeast struct {
	slog.Handler
	min slog.Level
}

func (h atLeast) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h atLeast) WithAttrs(attrs []slog.Attr) slog.Handler {
	return atLeast{h.Handler.WithAttrs(attrs), h.min}
}

func (h atLeast) WithGroup(name string) slog.Handler {
	return atLeast{h.Handler.WithGroup(name), h.min}
}
