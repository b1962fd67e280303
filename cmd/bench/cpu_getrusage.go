//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package bench

import (
	"fmt"
	"syscall"
	"time"
)

// cpuTime returns the CPU time this process has used so far, in user and
// kernel mode together.
func cpuTime() (time.Duration, error) {
	var self syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		return 0, fmt.Errorf("CPU time: %w", err)
	}
	return time.Duration(self.Utime.Nano() + self.Stime.Nano()), nil
}
