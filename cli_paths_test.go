package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestAnEmptyDBPathIsAUsageError(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
func TestDemoRefusesAFileItDidNotMake(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("my notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	queue := filepath.Join(dir, "jobs.db")
	mustLite(t, queue, "", "enqueue", "-k", "demo", "job 1") // a real queue, even one that looks like the demo's
	for _, file := range []string{notes, queue, dir} {
		t.Run(filepath.Base(file)+" is refused and left as it was", func(t *testing.T) {
			is := is.New(t)
			var jobs []cliJob
			if file == queue {
				jobs = listJobs(t, queue)
			}
			notesBefore, _ := os.ReadFile(notes)
			cmd := exec.CommandContext(t.Context(), liteBin, "demo", "--file", file, "--jobs", "10", "--workers", "3")
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			exit, ok := err.(*exec.ExitError)
			is.True(ok)
			is.Equal(exit.ExitCode(), 2)
			is.Equal(errOut.String(), fmt.Sprintf("lite: demo: %s exists and is not a demo's file; remove it or give another --file\n", file))
			is.Equal(out.String(), "")
			notesAfter, _ := os.ReadFile(notes)
			is.Equal(notesAfter, notesBefore)
			if file == queue {
				is.Equal(listJobs(t, queue), jobs)
			}
		})
	}

	t.Run("a previous demo's file is made anew", func(t *testing.T) {
		is := is.New(t)
		file := filepath.Join(t.TempDir(), "demo.db")
		for range 2 {
			out, err := exec.CommandContext(t.Context(), liteBin, "demo", "--file", file, "--jobs", "10", "--workers", "3").CombinedOutput()
			is.NoErr(err)
			is.True(strings.Contains(string(out), "10 of 10 jobs done"))
		}
		is.Equal(len(listJobs(t, file)), 10) // the second run's jobs only
	})
}

func TestADBThatIsNotAFilePathIsRefused(t *testing.T) {
	t.Parallel()
	for _, db := range []string{":memory:", "file:jobs.db", "file:jobs.db?mode=memory"} {
		for _, command := range [][]string{{"enqueue", "x"}, {"ls"}} {
			t.Run(db+" "+command[0], func(t *testing.T) {
				is := is.New(t)
				dir := t.TempDir()
				cmd := exec.CommandContext(t.Context(), liteBin, append([]string{"--db", db}, command...)...)
				cmd.Dir = dir
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				err := cmd.Run()
				exit, ok := err.(*exec.ExitError)
				is.True(ok)
				is.Equal(exit.ExitCode(), 2)
				is.True(strings.Contains(errOut.String(), "--db takes a file path"))
				entries, err := os.ReadDir(dir)
				is.NoErr(err)
				is.Equal(len(entries), 0) // no file named after it
			})
		}
	}
}

func TestADBURLReachesTheServerAsGivenAndItsPasswordIsNeverPrinted(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every command that connects fails there.
	const url = "postgres://ada:s3cret@127.0.0.1:1/jobs?connect_timeout=5"
	const shown = "postgres://ada:xxxxx@127.0.0.1:1/jobs?connect_timeout=5"
	for _, c := range []struct {
		name string
		args []string
		env  string
		code int
		want string
	}{
		{"--db", []string{"--db", url, "ls"}, "", 1, "lite: open " + shown + ": connect: "},
		{"LITE_DB", []string{"enqueue", "x"}, "LITE_DB=" + url, 1, "lite: open " + shown + ": connect: "},
		{"a postgresql:// URL", []string{"--db", strings.Replace(url, "postgres:", "postgresql:", 1), "stats"}, "", 1,
			"lite: open " + strings.Replace(shown, "postgres:", "postgresql:", 1) + ": connect: "},
		{"a URL given to demo", []string{"demo", "--file", url}, "", 2, "lite: demo: --file takes a path"},
		{"schema on a URL", []string{"--db", url, "schema"}, "", 2, "lite: schema prints a SQLite file's schema"},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			is.Equal(exit.ExitCode(), c.code)
			is.True(strings.HasPrefix(errOut.String(), c.want)) // the URL as given, not made a path
			is.True(!strings.Contains(errOut.String(), "s3cret"))
			is.Equal(strings.Count(errOut.String(), "\n"), 1) // one line
			is.Equal(out.String(), "")
			entries, err := os.ReadDir(dir)
			is.NoErr(err)
			is.Equal(len(entries), 0) // no file named after the URL
		})
	}
}

func TestALibpqConnectionStringIsRefusedNotMadeAFile(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	dir := t.TempDir()
	cmd := exec.Command(liteBin, "--db", "host=127.0.0.1 user=bob password=s3cretPW", "enqueue", "{}")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	is.True(errors.As(err, &exit) && exit.ExitCode() == 2)
	is.True(strings.Contains(string(out), "give it as a postgres:// URL"))
	is.True(!strings.Contains(string(out), "s3cretPW")) // never echoed
	entries, _ := os.ReadDir(dir)
	is.Equal(len(entries), 0) // no file named after it
}
