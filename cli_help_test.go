package main

import (
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestHelpNamesEveryCommand(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "lite.db")
	t.Run("lite alone lists every command, on stdout, exit 0", func(t *testing.T) {
		is := is.New(t)
		cmd := exec.CommandContext(t.Context(), liteBin)
		r := runCmd(t, cmd)
		is.Equal(r.code, 0)
		out := r.stdout
		is.Equal(mustLite(t, db, "", "--json"), out) // global flags alone too
		for _, command := range []string{"enqueue", "work", "ls", "bench", "schedule add", "progress", "log", "help", "completion"} {
			is.True(strings.Contains(out, "\n  "+command+" ")) // each named, none cut off
		}
		is.True(!strings.Contains(out, "bench-child")) // hidden commands stay hidden
	})
	t.Run("lite help CMD prints what lite CMD --help prints", func(t *testing.T) {
		is := is.New(t)
		for _, command := range [][]string{{"enqueue"}, {"ls"}, {"schedule", "add"}, {"help"}} {
			help := mustLite(t, db, "", append([]string{"help"}, command...)...)
			is.Equal(help, mustLite(t, db, "", append(command, "--help")...))
			is.True(strings.HasPrefix(help, "Usage: lite "+strings.Join(command, " ")))
		}
	})
	t.Run("an unknown command is a one-line usage error that points to lite help", func(t *testing.T) {
		is := is.New(t)
		for _, args := range [][]string{{"nosuch"}, {"help", "nosuch"}, {"help", "ls", "extra"}, {"help", "enqueue", "extra"}, {"help", "schedule", "nosuch"}} {
			r := runLite(t, db, "", args...)
			is.Equal(r.code, 2)
			is.Equal(r.stdout, "")
			is.Equal(strings.Count(r.stderr, "\n"), 1)
		}
		is.Equal(runLite(t, db, "", "nosuch").stderr, "lite: unexpected argument nosuch (lite help lists the commands)\n")
		// enqueue takes a payload: extra would pass for one, and its help print.
		is.Equal(runLite(t, db, "", "help", "enqueue", "extra").stderr, "lite: help: lite has no command enqueue extra (lite help lists the commands)\n")
	})
	_, err := os.Stat(db)
	is.New(t).True(os.IsNotExist(err)) // help creates no file
}

// completions runs the binary as a shell asks it for completions: with the
// line typed so far in COMP_LINE, and where the cursor is in COMP_POINT.
func completions(t *testing.T, line string, env ...string) []string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), liteBin)
	cmd.Env = append(append(os.Environ(), "COMP_LINE="+line, "COMP_POINT="+strconv.Itoa(len(line))), env...)
	r := runCmd(t, cmd)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("completing %q: exit %d: %s", line, r.code, r.stderr)
	}
	return slices.Sorted(slices.Values(strings.Fields(r.stdout))) // the shell sorts them
}

// queueCompletions is completions of a line that ends in a queue's name.
// The binary offers none when reading the file takes over a second (a
// shell waits on it), which a loaded machine can make it take: an empty
// answer is asked again, a few times.
func queueCompletions(t *testing.T, line string, env ...string) []string {
	t.Helper()
	for range 5 {
		if names := completions(t, line, env...); names != nil {
			return names
		}
	}
	return nil
}

func TestShellCompletion(t *testing.T) {
	t.Parallel()
	t.Run("bash loads the script and completes lite with the binary", func(t *testing.T) {
		is := is.New(t)
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("no bash")
		}
		cmd := exec.CommandContext(t.Context(), "bash", "--norc", "--noprofile", "-c",
			`source <("$0" completion bash) && complete -p lite`, liteBin)
		r := runCmd(t, cmd)
		is.Equal(r.stderr, "")
		is.Equal(r.code, 0)
		is.Equal(r.stdout, "complete -o default -C '"+liteBin+"' lite\n")
	})
	t.Run("zsh and fish get scripts that run the binary", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "lite.db")
		is.True(strings.Contains(mustLite(t, db, "", "completion", "zsh"), "bashcompinit\ncomplete -o default -C '"+liteBin+"' lite\n"))
		fish := mustLite(t, db, "", "completion", "fish")
		is.True(strings.Contains(fish, "set -lx COMP_LINE (commandline -cp)"))
		is.True(strings.Contains(fish, "    '"+liteBin+"'\n"))
		is.Equal(runLite(t, db, "", "completion", "tcsh").code, 2)
	})
	t.Run("commands, flags, states and queue names complete", func(t *testing.T) {
		is := is.New(t)
		db := filepath.Join(t.TempDir(), "lite.db")
		mustLite(t, db, "", "enqueue", "-q", "mail", "x")
		mustLite(t, db, "", "enqueue", "-q", "media", "x")
		mustLite(t, db, "", "enqueue", "-q", "reports", "x")
		// Names the shell would read as something else are not offered:
		// a file from before the rule on queue names may hold them.
		conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(10000)")
		is.NoErr(err)
		for _, hostile := range []string{"m$(touch pwned)", "m b", "m\u202e"} {
			mustLite(t, db, "", "enqueue", "-q", "old", "x")
			_, err := conn.Exec(`update lite_jobs set queue = ? where queue = 'old'`, hostile)
			is.NoErr(err)
		}
		is.NoErr(conn.Close())
		is.Equal(completions(t, "lite l"), []string{"limit", "log", "ls"})
		is.Equal(completions(t, "lite schedule a"), []string{"add"})
		is.Equal(completions(t, "lite ls --st"), []string{"--state"})
		is.Equal(completions(t, "lite ls -s d"), []string{"dead", "done"})
		is.Equal(queueCompletions(t, "lite --db "+db+" ls -q m"), []string{"mail", "media"})
		is.Equal(queueCompletions(t, "lite pause m", "LITE_DB="+db), []string{"mail", "media"})
		missing := filepath.Join(t.TempDir(), "missing.db")
		is.Equal(completions(t, "lite --db "+missing+" pause "), []string(nil))
		_, err = os.Stat(missing)
		is.True(os.IsNotExist(err)) // completing creates no file
	})
}
