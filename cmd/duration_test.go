package cmd

import (
	"errors"
	"testing"
	"time"

	"github.com/matryer/is"
)

func TestDurationsTakeADaysSuffix(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
	}{
		{"90s", 90 * time.Second},
		{"7d", 7 * 24 * time.Hour},
		{"1d12h", 36 * time.Hour},
		{"0d", 0},
		{"-3d", -72 * time.Hour},
		{"106751d", 106751 * 24 * time.Hour},
	} {
		t.Run(c.in+" is read", func(t *testing.T) {
			is := is.New(t)
			d, err := parseDuration(c.in)
			is.NoErr(err)
			is.Equal(d, c.want)
		})
	}
	for _, c := range []struct {
		in      string
		tooLong bool
	}{
		{"7", false}, {"1.5d", false}, {"d", false}, {"7 d", false}, {"1d-1h", false}, {"1d+1h", false}, {"1dx", false}, {"", false},
		{"106752d", true}, {"106751d1000h", true}, {"99999999999999999999d", true}, {"1d999999999999h", true}, {"9999999999h", true},
	} {
		t.Run(c.in+" is refused", func(t *testing.T) {
			is := is.New(t)
			_, err := parseDuration(c.in)
			is.True(err != nil)
			is.Equal(errors.Is(err, errDurationTooLong), c.tooLong)
		})
	}
}
