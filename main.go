// Command lite is a durable job queue in one SQLite file: enqueue jobs from
// a shell script, run them with `lite work -- COMMAND`, inspect and repair
// them with the admin commands. See README.md.
package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/liteq/lite/cmd"
)

//go:embed schema.sql
var schema string

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lite:", err)
		os.Exit(cmd.ExitCode(err))
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
