package bench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestPeakRSS(t *testing.T) {
	if os.Getenv("LITE_TEST_PEAK_RSS_CHILD") != "" {
		// The child of the last subtest: print its own peak and stop.
		rss, err := peakRSS()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("peak-rss " + strconv.FormatUint(rss, 10) + "\n")
		return
	}
	const big = 256 << 20
	var ballast []byte

	t.Run("memory this process touched counts", func(t *testing.T) {
		is := is.New(t)
		before, err := peakRSS()
		is.NoErr(err)
		is.True(before > 1<<20) // a Go test binary is more than a MiB
		ballast = make([]byte, big)
		for i := 0; i < len(ballast); i += 4096 {
			ballast[i] = 1
		}
		after, err := peakRSS()
		is.NoErr(err)
		is.True(after >= before+big*9/10) // bytes, not KiB: touching 256 MiB shows
	})

	t.Run("a child reports its own peak, not its parent's", func(t *testing.T) {
		is := is.New(t)
		child := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestPeakRSS$")
		child.Env = append(os.Environ(), "LITE_TEST_PEAK_RSS_CHILD=1")
		out, err := child.Output()
		is.NoErr(err)
		_, text, ok := strings.Cut(string(out), "peak-rss ")
		is.True(ok)
		rss, err := strconv.ParseUint(strings.Fields(text)[0], 10, 64)
		is.NoErr(err)
		// why: on Linux getrusage's ru_maxrss would carry this process's
		// 256 MiB over into the child through execve.
		is.True(rss > 1<<20 && rss < big/2)
		ballast[0]++ // keep the ballast alive until the child has run
	})
}
