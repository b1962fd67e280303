package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAnEmptyDBPathIsAUsageError(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string
	}{
		{"an empty LITE_DB", []string{"ls"}, "LITE_DB="},
		{"an empty --db", []string{"--db", "", "enqueue", "x"}, "LITE_DB=elsewhere.db"},
	} {
		t.Run(c.name+" is refused before any file is touched", func(t *testing.T) {
			is := is.New(t)
			dir := t.TempDir()
			cmd := exec.CommandContext(t.Context(), liteBin, c.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), c.env)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			exit, ok := err.(*exec.ExitError)
			is.True(ok)
			is.Equal(exit.ExitCode(), 2) // a usage error
			is.Equal(errOut.String(), "lite: --db (or LITE_DB) is empty; give the queue's file\n")
			is.Equal(out.String(), "")
			entries, err := os.ReadDir(dir)
			is.NoErr(err)
			is.Equal(len(entries), 0) // nothing created
		})
	}
}

func TestADBThatIsNotARegularFileIsLeftAlone(t *testing.T) {
	is := is.New(t)
	var before []string
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Stat(os.DevNull + suffix); err == nil {
			before = append(before, suffix)
		}
	}
	r := runLite(t, os.DevNull, "", "enqueue", "x")
	is.Equal(r.code, 2)
	is.Equal(r.stderr, "lite: --db "+os.DevNull+" is not a regular file\n")
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		_, err := os.Stat(os.DevNull + suffix)
		is.True(os.IsNotExist(err) || strings.Contains(strings.Join(before, " "), suffix)) // SQLite made no file beside it
	}
}
