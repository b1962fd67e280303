package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/liteq/lite/cmd"
)

// FuzzCLIArgs runs the command line on arbitrary arguments against a
// scratch file: it must never panic, and a failure must be one line with
// exit code 1 or 2.
func FuzzCLIArgs(f *testing.F) {
	for _, seed := range []string{
		"enqueue hello", "enqueue --delay 5m -q mail x", "enqueue --delay -1s x", "ls --state bogus",
		"show 1", "show abc", "stats", "purge --state done --older-than 1h", "retry 9", "cancel 1",
		"release 1", "reclaim --bogus", "--json ls -n 0", "--version", "--help", "bogus",
		"work", "work -c 0 --", "schema", "enqueue --file /nonexistent",
		"retention --done 7d --cancelled forever", "retention --dead=-1h", "vacuum",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	db := filepath.Join(dir, "fuzz.db")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if len(args) > 0 && (args[0] == "work" || args[0] == "demo" || args[0] == "bench" || args[0] == "bench-child") {
			return // long-running commands are tested on their own
		}
		var out, errOut bytes.Buffer
		t.Chdir(dir) // relative paths in the arguments land in the scratch dir
		err := run(t.Context(), append([]string{"--db", db}, args...), strings.NewReader(""), &out, &errOut)
		if err == nil {
			return
		}
		if code := cmd.ExitCode(err); code != 1 && code != 2 {
			t.Fatalf("%q: exit code %d", line, code)
		}
		if strings.Contains(err.Error(), "\n") && cmd.ExitCode(err) != 2 {
			t.Fatalf("%q: error is not one line: %q", line, err)
		}
	})
}
