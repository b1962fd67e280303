//go:build freebsd || netbsd || openbsd || dragonfly

package cmd

import (
	"fmt"
	"syscall"
)

// peakRSS returns this process's peak resident memory in bytes. The BSDs
// count ru_maxrss in KiB.
func peakRSS() (uint64, error) {
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	return uint64(self.Maxrss) << 10, nil
}
