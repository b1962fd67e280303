// Command lite is a durable job queue in one SQLite file: enqueue jobs from
// a shell script, run them with `lite work -- COMMAND`, inspect and repair
// them with the admin commands. See README.md.
package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/liteq/lite/cmd"
	_ "github.com/liteq/lite/lite/pg" // --db postgres://…
	// Schedules name IANA zones: the binary carries the zone database
	// (about 400 KiB) so that they work where the system has none (Windows,
	// minimal containers). The library leaves that choice to programs.
	_ "time/tzdata"
)

//go:embed schema.sql
var schema string

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	// Go ends a program that writes to a broken pipe on fd 1 or 2 unless
	// SIGPIPE is handled; with it handled, the write fails with EPIPE. A
	// worker whose log reader went away must keep working. Notify, not
	// Ignore: an ignored signal stays ignored in the commands lite starts,
	// and they are owed the default.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := stopOnSignals(context.Background())
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	// A reader that closed the pipe (lite ls | head -1) has what it
	// wanted: a normal end, as for the tools it is piped through.
	if err != nil && !errors.Is(err, syscall.EPIPE) {
		fmt.Fprintln(os.Stderr, "lite:", err)
		os.Exit(cmd.ExitCode(err))
	}
}

// repeatWindow is how long after a request to stop a copy of the same
// signal is taken for that request: GNU timeout sends its SIGTERM to lite
// and then to lite's process group, systemd to the main process and then
// to its cgroup, and each is one request.
const repeatWindow = time.Second

// stopOnSignals returns a context that the first SIGINT, SIGTERM or SIGHUP
// ends: a graceful stop. SIGHUP (a closed terminal or ssh session) would
// otherwise kill lite work with its jobs still leased. It carries, for
// lite work, a second context that a second request ends: stop at once.
func stopOnSignals(parent context.Context) (ctx context.Context, stop func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	graceful, now, stopWatching := watchSignals(parent, signals, time.Now)
	return cmd.WithStopNow(graceful, now), func() {
		signal.Stop(signals)
		stopWatching()
	}
}

// watchSignals ends the graceful context on the first signal, and the
// stop-at-once one on a second request: another signal, or the same one
// repeatWindow or more after the first.
func watchSignals(parent context.Context, signals <-chan os.Signal, now func() time.Time) (graceful, atOnce context.Context, stop func()) {
	stopAtOnce, stopNow := context.WithCancel(parent)
	graceful, stopGraceful := context.WithCancel(stopAtOnce)
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-signals:
			stopGraceful()
		case <-done:
			return
		}
		at := now()
		for {
			select {
			case s := <-signals:
				if s != first || now().Sub(at) >= repeatWindow {
					stopNow()
					return
				}
			case <-done:
				return
			}
		}
	}()
	return graceful, stopAtOnce, func() {
		close(done)
		stopGraceful()
		stopNow()
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return cmd.Run(ctx, args, cmd.Env{
		Stdin:   stdin,
		Stdout:  stdout,
		Stderr:  stderr,
		Version: version,
		Schema:  schema,
	})
}
