package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestHelpListsOnlyTheUsersCommands(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(Run(t.Context(), []string{"--help"}, Env{Stdout: &out, Stderr: &out}))
	is.True(strings.Contains(out.String(), "bench")) // a user's command is listed
	for _, hidden := range []string{"bench-child", "demo-job"} {
		is.True(!strings.Contains(out.String(), hidden)) // lite runs it of itself; the user never types it
	}
}

func TestDemoJobTakesItsGenerationFromLiteWork(t *testing.T) {
	is := is.New(t)
	t.Setenv("LITE_JOB_GENERATION", "7") // as lite work sets it
	var out bytes.Buffer
	is.NoErr(Run(t.Context(), []string{"demo-job"}, Env{Stdout: &out, Stderr: &out}))
	is.Equal(out.String(), "ran at generation 7") // the result the demo's summary checks
}
