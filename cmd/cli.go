// Package cmd holds the lite command line: one file per command, each a
// kong command whose Run receives what it needs. What the commands run
// lives in subpackages: cmd/bench, cmd/demo, and cmd/proc (the process
// tree of a job's command). main needs Run, Env, ExitCode and WithStopNow;
// nothing else is exported.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
)

// Env is what the binary hands the commands: they read and write these,
// never os.Stdin or os.Stdout.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Version        string
	Schema         string
}

// globals are the flags every command shares.
type globals struct {
	DB       string           `name:"db" env:"LITE_DB" default:"lite.db" type:"db" help:"The queue's SQLite file, or a PostgreSQL URL (postgres://user:password@host/database)."`
	JSON     bool             `name:"json" help:"Print data as JSON."`
	LogLevel slog.Level       `name:"log-level" default:"info" help:"Worker log level: debug, info, warn, error."`
	Version  kong.VersionFlag `help:"Print the version and exit."`
}

// root is the root of the command line.
type root struct {
	globals

	Enqueue   enqueueCmd   `cmd:"" help:"Add a job; print its id."`
	Work      workCmd      `cmd:"" help:"Run COMMAND once per job: lite work [flags] -- COMMAND [ARGS...]."`
	Ls        lsCmd        `cmd:"" help:"List jobs."`
	Show      showCmd      `cmd:"" help:"Show every field of one job."`
	Stats     statsCmd     `cmd:"" help:"Count jobs per queue and state."`
	Workers   workersCmd   `cmd:"" help:"List running workers, and ready jobs that none of them takes."`
	Release   releaseCmd   `cmd:"" help:"Make a running job available again now, voiding its lease."`
	Reclaim   reclaimCmd   `cmd:"" help:"Take back running jobs whose heartbeat lapsed."`
	Retry     retryCmd     `cmd:"" help:"Make a dead or cancelled job available again."`
	Signal    signalCmd    `cmd:"" help:"Send a job a signal its await-signal or AwaitSignal consumes: lite signal ID NAME [PAYLOAD]."`
	Cancel    cancelCmd    `cmd:"" help:"Cancel a blocked, available or running job."`
	Batch     batchCmd     `cmd:"" help:"Show a batch's progress: done, dead, cancelled, pending."`
	Wait      waitCmd      `cmd:"" help:"Wait for jobs to finish; print their results."`
	Result    resultCmd    `cmd:"" help:"Print a finished job's result."`
	Purge     purgeCmd     `cmd:"" help:"Delete finished jobs older than a duration."`
	Delete    deleteCmd    `cmd:"" help:"Delete the available and finished jobs a filter matches: lite delete --state dead --queue q."`
	Pause     pauseCmd     `cmd:"" help:"Stop a queue's jobs from starting, in every process; running ones finish."`
	Resume    resumeCmd    `cmd:"" help:"Let a paused queue's jobs start again."`
	Limit     limitCmd     `cmd:"" help:"Show or cap a queue's running jobs and starts per period across every process."`
	Retention retentionCmd `cmd:"" help:"Show or set how long finished jobs are kept: lite retention --done 24h --dead 7d --cancelled forever."`
	Declare   declareCmd   `cmd:"" help:"Own schedules, retention and limits from a JSON file: what the owner no longer declares is removed, what was set by hand is kept."`
	Vacuum    vacuumCmd    `cmd:"" help:"Compact the file (SQLite: and switch it to incremental auto-vacuum; it rewrites the file, holding the write lock throughout)."`
	Backup    backupCmd    `cmd:"" help:"Write a consistent copy of the file to DEST while workers run (PostgreSQL: use pg_dump)."`
	Restore   restoreCmd   `cmd:"" help:"Put a backup at --db, fenced so that no lease or id is handed out twice; --in-place fences a restore made by other means."`
	Serve     serveCmd     `cmd:"" help:"Serve the dashboard, the JSON API and metrics over HTTP; with -- COMMAND, run workers too."`
	Demo      demoCmd      `cmd:"" help:"Watch several workers, one killed and one frozen, finish every job once."`
	Schema    schemaCmd    `cmd:"" help:"Print the SQL schema of a lite database."`
	Bench     benchCmd     `cmd:"" help:"Measure lite against the raw limits of SQLite on this machine, or of the PostgreSQL server --db names."`

	Schedule scheduleCmd `cmd:"" help:"Add, list, remove, pause and resume periodic jobs."`

	Progress    progressCmd    `cmd:"" help:"From a command of lite work: report its job's progress (40% \"converting\")."`
	Log         logCmd         `cmd:"" help:"From a command of lite work: append lines (or stdin's) to its job's log."`
	Step        stepCmd        `cmd:"" help:"From a command of lite work: run COMMAND once per job, print its recorded stdout: lite step NAME -- COMMAND."`
	Sleep       sleepCmd       `cmd:"" help:"From a command of lite work: park its job for a while (lite sleep 2h || exit $?)."`
	AwaitSignal awaitSignalCmd `cmd:"" name:"await-signal" help:"From a command of lite work: print a signal's payload, or park its job until it comes."`

	Help       helpCmd       `cmd:"" help:"Show a command's help: lite help enqueue is lite enqueue --help."`
	Completion completionCmd `cmd:"" help:"Print a shell's completion script: source <(lite completion bash); zsh, fish."`

	// What lite runs of itself, never the user (hidden.go).
	BenchChild benchChildCmd `cmd:"" name:"bench-child" hidden:""`
	DemoJob    demoJobCmd    `cmd:"" name:"demo-job" hidden:""`
}

// usageError is an error in how lite was called: exit code 2.
type usageError struct{ Err error }

func (e usageError) Error() string { return e.Err.Error() }
func (e usageError) Unwrap() error { return e.Err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// jobError words a failed command on one job the same way for every
// command: "retry job 637: job not found". The library's error already
// names the job in its own words ("get job 637: job not found" for show),
// so when that is all its outer layer adds, the layer is dropped rather
// than doubled.
func jobError(op string, id int64, err error) error {
	if inner := errors.Unwrap(err); inner != nil && strings.HasSuffix(err.Error(), ": "+inner.Error()) {
		err = inner
	}
	return fmt.Errorf("%s job %d: %w", op, id, err)
}

// exitError is an error with an exit code of its own.
type exitError struct {
	err  error
	code int
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// ExitInterrupted is the exit code of a command that a signal (Ctrl-C,
// SIGTERM) stopped: 128 + SIGINT, as shells report a process killed by
// it.
const ExitInterrupted = 130

// interrupted is the error of a command that a signal stopped: its one
// line says what was done; the statement's error that the signal caused
// ("context canceled", a rollback's) says nothing to a user.
func interrupted(format string, args ...any) error {
	return exitError{fmt.Errorf(format, args...), ExitInterrupted}
}

// stopsOnSignals says whether a signal is command's designed stop (a
// graceful shutdown), whose errors say what the stop did.
func stopsOnSignals(command string) bool {
	return command == "work" || command == "serve"
}

// ExitCode is the process exit code for an error Run returned: 2 for a
// usage error (a setting the library refused as given is one), a
// command's own code (lite work --exit-when-empty, lite wait), or 1.
func ExitCode(err error) int {
	var coded exitError
	switch {
	case errors.As(err, new(usageError)), errors.Is(err, lite.ErrInvalid):
		return 2
	case errors.As(err, &coded):
		return coded.code
	}
	return 1
}

// parsedNoCommand says whether err is kong's, from a line on which it
// found no command.
func parsedNoCommand(err error) bool {
	parse, ok := err.(*kong.ParseError)
	return ok && parse.Context != nil && commandName(parse.Context) == ""
}

// noCommand says whether err is kong's asking for a command, on a line
// that gave none (flags alone), in place of which lite prints its help.
func noCommand(err error) bool {
	return parsedNoCommand(err) && strings.HasPrefix(err.Error(), "expected one of ")
}

// noCommandHint points an error at a word that is no command to lite help.
func noCommandHint(err error) error {
	if parsedNoCommand(err) {
		return fmt.Errorf("%w (lite help lists the commands)", err)
	}
	return err
}

// exitRequest carries kong's request to exit (after --help or --version)
// out of the parser without calling os.Exit.
type exitRequest int

// createsFile says whether command may make a new database, saying so on
// stderr: the commands that write, and lite limit when it sets a limit.
// The others refuse a missing file rather than create an empty one.
func (cli *root) createsFile(command string) bool {
	switch command {
	case "enqueue", "work", "serve", "schedule add", "pause", "declare":
		return true
	case "limit":
		return cli.Limit.sets()
	}
	return false
}

// dbMapper reads a database flag: a file path is made absolute, as kong's
// path type makes it, and a server URL is kept as it is, which the path
// type would turn into a file name (/home/ada/postgres:/db.internal/app).
func dbMapper(ctx *kong.DecodeContext, target reflect.Value) error {
	var s string
	if err := ctx.Scan.PopValueInto("file", &s); err != nil {
		return err
	}
	if s != "" && !lite.IsServerURL(s) {
		s = kong.ExpandPath(s)
	}
	target.SetString(s)
	return nil
}

// checkDB refuses a --db that SQLite must not be given, before SQLite
// sees it: an empty path (LITE_DB set to nothing), and anything but a
// regular file or, for a command that may create one, a new path. SQLite
// would open a device or a FIFO and write its journal beside it
// (/dev/null-journal). A server URL is the server's to judge.
func checkDB(path string, mayCreate bool) error {
	if path == "" {
		return usagef("--db (or LITE_DB) is empty; give the queue's file")
	}
	if lite.IsServerURL(path) {
		return nil
	}
	// A libpq key=value string would become a file of that name, with its
	// password in the name: refuse it without echoing it.
	if libpqKeywords.MatchString(path) {
		return usagef("--db looks like a PostgreSQL key=value connection string: give it as a postgres:// URL")
	}
	// The path arrives made absolute: ":memory:" and "file:" URIs, which
	// SQLite would read as such, show in its last element.
	if base := filepath.Base(path); base == ":memory:" || strings.HasPrefix(base, "file:") {
		return usagef("--db takes a file path, not %s: the queue's processes share one file", base)
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && mayCreate:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("open %s: no such file or directory: this command reads a database and creates none (check --db or LITE_DB)", path)
	case err != nil:
		return fmt.Errorf("open %s: %w", path, err)
	case !info.Mode().IsRegular():
		return usagef("--db %s is not a regular file", path)
	}
	return nil
}

// libpqKeywords finds the keywords of a libpq connection string.
var libpqKeywords = regexp.MustCompile(`(^|[\s/])(host|hostaddr|port|dbname|user|password|sslmode|service)=`)

// commandName is the chosen command without its arguments: "enqueue",
// "schedule add".
func commandName(kctx *kong.Context) string {
	var words []string
	for _, p := range kctx.Path {
		if p.Command != nil {
			words = append(words, p.Command.Name)
		}
	}
	return strings.Join(words, " ")
}

// flagGiven reports whether the flag name is on the command line, even
// with an empty value.
func flagGiven(kctx *kong.Context, name string) bool {
	return flagCount(kctx, name) > 0
}

// flagCount is how many times the flag name is on the command line.
func flagCount(kctx *kong.Context, name string) int {
	n := 0
	for _, p := range kctx.Path {
		if p.Flag != nil && p.Flag.Name == name {
			n++
		}
	}
	return n
}

// queueOptions are the options command opens the queue with: a worker's
// results may be as large as its --max-result.
func (cli *root) queueOptions(command string) lite.Options {
	var maxResult int
	switch command {
	case "work":
		maxResult = cli.Work.maxResult
	case "serve":
		maxResult = cli.Serve.maxResult
	}
	return lite.Options{MaxPayloadBytes: max(maxResult, lite.DefaultMaxPayloadBytes),
		ExternalCheckpoints: cli.replicates(command), AfterCommit: cli.afterCommit(command)}
}

// openQueue opens the queue at db; a file that exists but cannot be
// opened for writing (a read-only directory or mount, no permission) is
// opened read-only: the commands that read work, and those that write
// fail at their first write with lite's read-only error rather than an
// open's "unable to open database file".
func openQueue(ctx context.Context, db string, opts lite.Options, exists bool) (*lite.Queue, error) {
	q, err := lite.Open(ctx, db, opts)
	if err == nil || !exists || lite.IsServerURL(db) {
		return q, err
	}
	opts.ReadOnly = true
	if ro, roErr := lite.Open(ctx, db, opts); roErr == nil {
		return ro, nil
	}
	return nil, err
}

// Run parses args and runs the chosen command. The queue opens only when a
// command asks for one, so --help creates no file.
func Run(ctx context.Context, args []string, env Env) (err error) {
	var cli root
	var queue *lite.Queue
	var command string
	parser, err := kong.New(&cli, append([]kong.Option{
		kong.Name("lite"),
		kong.Description("A durable job queue in one SQLite file."),
		kong.Writers(env.Stdout, env.Stderr),
		kong.Exit(func(code int) { panic(exitRequest(code)) }),
		kong.Vars{"version": env.Version},
		kong.NamedMapper("db", kong.MapperFunc(dbMapper)),
		durationMapper,
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(env, &cli.globals),
		kong.BindToProvider(func() (*lite.Queue, error) {
			if err := checkDB(cli.DB, cli.createsFile(command)); err != nil {
				return nil, err
			}
			_, missing := os.Stat(cli.DB)
			q, err := openQueue(ctx, cli.DB, cli.queueOptions(command), missing == nil)
			if err == nil && errors.Is(missing, fs.ErrNotExist) && !lite.IsServerURL(cli.DB) {
				// A typo in --db or LITE_DB shows here, not as a worker
				// waiting on an empty file.
				fmt.Fprintf(env.Stderr, "lite: created new database %s\n", safe(cli.DB))
			}
			queue = q
			return q, err
		}),
	}, decimalMappers...)...)
	if err != nil {
		return err
	}
	// An error may echo a job's queue, kind or key, a line of a file or an
	// argument: whatever it returns must be safe to print.
	defer func() {
		if err != nil && (terminalSafe{err}).Error() != err.Error() {
			err = terminalSafe{err}
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			code, ok := r.(exitRequest)
			if !ok {
				panic(r)
			}
			if code != 0 {
				err = usageError{errors.New("invalid usage")}
			}
		}
	}()
	answerCompletion(ctx, parser)
	// The parser reads its arguments and the environment it maps to flags
	// as text, and turns bytes that are not UTF-8 into U+FFFD, after "--"
	// too: two step names, signal names, keys or files that differ only
	// there would be one, and a payload would change silently. Those are
	// refused. A command's own arguments after "--" (lite work, serve,
	// step) are passed on as they were given, whatever their bytes (a
	// file name in Latin-1: see asGiven).
	head, tail := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		head, tail = args[:i], args[i+1:]
	}
	if err := textOnly(head); err != nil {
		return err
	}
	if err := envTextOnly(); err != nil {
		return err
	}
	kctx, err := parser.Parse(args)
	if noCommand(err) {
		return err.(*kong.ParseError).Context.PrintUsage(false) // lite alone lists every command
	}
	if err != nil {
		return usageError{noCommandHint(err)}
	}
	command = commandName(kctx)
	if !passesOn(command) {
		if err := textOnly(tail); err != nil {
			return err
		}
	}
	if n := flagCount(kctx, "db"); n > 1 { // kong keeps the last, which may not be the file meant
		return usagef("--db is given %d times: give it once", n)
	}
	if command == "demo" && lite.IsServerURL(cli.DB) {
		return usagef("demo runs on a SQLite file of its own (--file), not on the server that --db or LITE_DB names (%s)", lite.Redact(cli.DB))
	}
	err = kctx.Run()
	if err != nil && ctx.Err() != nil && !stopsOnSignals(command) && ExitCode(err) != ExitInterrupted &&
		!errors.Is(err, lite.ErrAfterCommit) {
		// A command whose statement the signal cut off wrote nothing
		// of it (lite's transactions roll back unless their commit
		// began); one that says more of what it did words its own.
		err = interrupted("%s: interrupted; its last write was rolled back", command)
	}
	if queue != nil {
		err = errors.Join(err, queue.Close())
	}
	return err
}

// textOnly refuses an argument that is not valid UTF-8.
func textOnly(args []string) error {
	for _, a := range args {
		if !utf8.ValidString(a) {
			return usagef("an argument is not valid UTF-8: %q (lite reads its arguments as text; a payload of other bytes goes on stdin, as -)", a)
		}
	}
	return nil
}

// envTextOnly refuses a LITE_ variable of the environment (LITE_DB,
// LITE_TOKEN: the parser maps them to flags) that is not valid UTF-8.
func envTextOnly() error {
	for _, kv := range os.Environ() {
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "LITE_") && !utf8.ValidString(value) {
			return usagef("%s is not valid UTF-8: %q (lite reads it as text)", name, value)
		}
	}
	return nil
}

// passesOn says whether command runs a command of its own, whose
// arguments after "--" it passes on as given (see asGiven).
func passesOn(command string) bool {
	return command == "work" || command == "serve" || command == "step"
}

// asGiven puts back into command, the arguments after "--" the parser
// read, the bytes they were given in (kctx.Args): the parser turned
// those that are not UTF-8 into U+FFFD. The Validate of each command
// that passesOn calls it first, so that its checks see them too. When
// the command's arguments are not those after "--" (the command named
// before it), they cannot be put back and must be text.
func asGiven(kctx *kong.Context, command *[]string) error {
	i := slices.Index(kctx.Args, "--")
	if i < 0 {
		return nil
	}
	tail := kctx.Args[i+1:]
	if len(tail) > 0 && len(argv(*command)) == len(tail) {
		*command = append([]string{"--"}, tail...)
		return nil
	}
	return textOnly(tail)
}
