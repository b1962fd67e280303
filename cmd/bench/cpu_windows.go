package bench

import (
	"fmt"
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime returns the CPU time this process has used so far, in user and
// kernel mode together.
func cpuTime() (time.Duration, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0, fmt.Errorf("CPU time: %w", err)
	}
	// A Filetime counts 100 ns intervals; Nanoseconds would read it as a
	// date since 1601.
	ticks := func(f windows.Filetime) int64 { return int64(f.HighDateTime)<<32 | int64(f.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100), nil
}
