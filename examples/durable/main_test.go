package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/matryer/is"
)

func TestAnOrderIsChargedOnceAndWaitsForItsSignal(t *testing.T) {
	is := is.New(t)
	var out bytes.Buffer
	is.NoErr(run(t.Context(), []string{filepath.Join(t.TempDir(), "durable.db")}, &out))
	is.Equal(out.String(), `first attempt: failed, parked ""
retry: parked, parked "sleep"
after the sleep: parked, parked "signal"
order 1: receipt-1, shipped by DHL, 1 charge
after the signal: done, parked ""
`)
}
