package cmd

import (
	"regexp"
	"time"
)

// digits are the numbers of a duration's terms.
var digits = regexp.MustCompile(`[0-9]+`)

// durationOverflows says whether s failed time.ParseDuration only because
// it is too long: written as a duration should be, its numbers too large
// for the 290 years a time.Duration holds. "1000000000h" overflows;
// "5parsecs" does not.
func durationOverflows(s string) bool {
	if _, err := time.ParseDuration(s); err == nil {
		return false
	}
	_, err := time.ParseDuration(digits.ReplaceAllString(s, "1"))
	return err == nil
}
