package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestEveryPaymentIsBookedOrDeclinedOnce(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), filepath.Join(t.TempDir(), "complete.db"), &out))
	is.Equal(out.String(), "5 payments booked, 1500 cents in all\n"+
		"job 6 declined: amount \"a lot\": not a number of cents\n")
}
