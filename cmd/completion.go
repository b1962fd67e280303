package cmd

import (
	"cmp"
	"context"
	"os"
	"strings"
	"time"

	"github.com/alecthomas/kong"
	"github.com/liteq/lite/lite"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"
)

// completionCmd prints the script that has a shell ask lite itself for
// completions: the shell runs lite with the line typed so far in
// COMP_LINE (kongplete's protocol, through posener/complete), and lite
// answers before it parses anything (see answerCompletion).
type completionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

// completionScripts hook lite into each shell, with the binary's path as
// ${bin}. zsh reads bash's completions through bashcompinit; fish has no
// COMP_LINE of its own, so the script sets it.
var completionScripts = map[string]string{
	"bash": "complete -o default -C ${bin} lite\n",
	"zsh":  "autoload -U +X bashcompinit && bashcompinit\ncomplete -o default -C ${bin} lite\n",
	"fish": `function __complete_lite
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    ${bin}
end
complete -f -c lite -a "(__complete_lite)"
`,
}

func (c *completionCmd) Run(env Env) error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	script := os.Expand(completionScripts[c.Shell], func(string) string { return shellQuote(bin) })
	_, err = env.Stdout.Write([]byte(script))
	return err
}

// shellQuote quotes s for bash, zsh and fish alike.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// answerCompletion answers a shell's request for completions, if this run is
// one (COMP_LINE is set), and ends the run; otherwise it does nothing.
func answerCompletion(ctx context.Context, parser *kong.Kong) {
	if os.Getenv("COMP_LINE") == "" {
		return
	}
	kongplete.Complete(parser,
		kongplete.WithPredictor("queue", complete.PredictFunc(func(complete.Args) []string { return queueNames(ctx) })),
		kongplete.WithExitFunc(func(code int) { panic(exitRequest(code)) }),
		kongplete.WithErrorHandler(func(error) {}))
}

// completionWait bounds how long completing a queue name may take: a
// shell waits on it.
const completionWait = time.Second

// queueNames are the queues of the SQLite file the line typed so far
// names with --db (or LITE_DB, or lite.db), if it exists: completing a
// name neither creates a file nor dials a server. The line is read whole,
// as the predictor sees only the words after the command's name, and a
// --db comes before it.
func queueNames(ctx context.Context) []string {
	db := cmp.Or(os.Getenv("LITE_DB"), "lite.db")
	args := strings.Fields(os.Getenv("COMP_LINE"))
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--db="); ok {
			db = v
		} else if a == "--db" && i+1 < len(args) {
			db = args[i+1]
		}
	}
	if lite.IsServerURL(db) || checkDB(kong.ExpandPath(db), false) != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, completionWait)
	defer cancel()
	q, err := lite.Open(ctx, kong.ExpandPath(db), lite.Options{BusyTimeout: completionWait})
	if err != nil {
		return nil
	}
	defer q.Close()
	stats, err := q.Stats(ctx)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(stats))
	for _, s := range stats {
		if shellWord(s.Queue) {
			names = append(names, s.Queue)
		}
	}
	return names
}

// shellWord reports whether name may be offered as a completion: the
// shell inserts a completion as typed, so a name it would read as
// something else (a space, a quote, $( ... ), a control or bidi
// character) is left out rather than printed raw.
func shellWord(name string) bool {
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("._-:/@+,=%", r):
		default:
			return false
		}
	}
	return name != ""
}
