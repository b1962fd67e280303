package cmd

import (
	"bytes"
	"testing"

	"github.com/matryer/is"
)

func TestDemoJobPrintsItsGeneration(t *testing.T) {
	is := is.New(t)
	t.Setenv("LITE_JOB_GENERATION", "7") // as lite work sets it
	var out bytes.Buffer
	is.NoErr(Run(t.Context(), []string{"demo-job"}, Env{Stdout: &out, Stderr: &out}))
	is.Equal(out.String(), "ran at generation 7") // the result the demo's summary checks
}
