//go:build race

package lite_test

// The race detector slows the transpiled SQLite about tenfold, so
// concurrency tests use fewer jobs under it; they still interleave.
const raceEnabled = true
