package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

// TestMain lets the test binary be the worker copy the program starts.
func TestMain(m *testing.M) {
	if path := os.Getenv(roleEnv); path != "" {
		if err := work(context.Background(), path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTwoProcessesShareOneFile(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), filepath.Join(t.TempDir(), "twoprocs.db"), &out))
	// why: both processes may not get jobs on a loaded machine, but every
	// job must be done
	is.True(bytes.HasPrefix(out.Bytes(), []byte("200 of 200 jobs done by ")))
}
