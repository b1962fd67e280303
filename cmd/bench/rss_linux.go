//go:build linux

package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// peakRSS returns this process's peak resident memory in bytes: VmHWM of
// /proc/self/status, the high-water mark of the memory its program has
// had since it started. getrusage's ru_maxrss is not used on Linux:
// execve carries it over from the memory the process had before, which
// for a child of Go's os/exec is its parent's, so a small child of a big
// parent would report the parent's peak as its own.
func peakRSS() (uint64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("peak RSS: VmHWM: %w", err)
			}
			return kib << 10, nil
		}
	}
	return 0, errors.New("peak RSS: no VmHWM in /proc/self/status")
}
