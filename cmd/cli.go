// Package cmd holds the lite command line: one file per command, each a
// kong command whose Run receives what it needs.
package cmd

import (
	"context"
	"errors"
	"io"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// Env is what the binary hands the commands: they write to these writers,
// never to os.Stdout.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Version        string
	Schema         string
}

// CLI is the root of the command line.
type CLI struct {
	DB      string           `name:"db" env:"LITE_DB" default:"lite.db" type:"path" help:"The queue's SQLite file."`
	Version kong.VersionFlag `help:"Print the version and exit."`

	Demo   DemoCmd   `cmd:"" help:"Show fencing at work on a local demo file."`
	Schema SchemaCmd `cmd:"" help:"Print the SQL schema of a lite database."`
}

// UsageError is an error in how lite was called: exit code 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode is the process exit code for an error Run returned: 2 for a
// usage error, 1 for any other.
func ExitCode(err error) int {
	if errors.As(err, new(UsageError)) {
		return 2
	}
	return 1
}

// exitRequest carries kong's request to exit (after --help or --version)
// out of the parser without calling os.Exit.
type exitRequest int

// Run parses args and runs the chosen command. The queue opens only when a
// command asks for one, so --help creates no file.
func Run(ctx context.Context, args []string, env Env) (err error) {
	var cli CLI
	var queue *lite.Queue
	parser, err := kong.New(&cli,
		kong.Name("lite"),
		kong.Description("A durable job queue in one SQLite file."),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.Vars{"version": env.Version},
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(env),
		kong.BindToProvider(func() (*lite.Queue, error) {
			q, err := lite.Open(ctx, cli.DB, lite.Options{})
			queue = q
			return q, err
		}),
	)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			if code != 0 {
				err = UsageError{errors.New("invalid usage")}
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		return UsageError{err}
	}
	err = kctx.Run()
	if queue != nil {
		err = errors.Join(err, queue.Close())
	}
	return err
}
