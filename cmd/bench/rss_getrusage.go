//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"fmt"
	"runtime"
	"syscall"
)

// peakRSS returns this process's peak resident memory in bytes, from
// ru_maxrss: bytes on darwin, KiB on the BSDs.
func peakRSS() (uint64, error) {
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	if runtime.GOOS == "darwin" {
		return uint64(self.Maxrss), nil
	}
	return uint64(self.Maxrss) << 10, nil
}
