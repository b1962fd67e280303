//go:build !race

package lite_test

const raceEnabled = false
