package demo

import (
	"bytes"
	"testing"

	"github.com/matryer/is"
)

func TestDemoJobPrintsItsGeneration(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(Job(t.Context(), 7, &out))
	is.Equal(out.String(), "ran at generation 7") // the result the demo's summary checks
}
