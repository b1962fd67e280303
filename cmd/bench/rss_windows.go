package bench

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// vmCounters is VM_COUNTERS (ntddk.h), which x/sys/windows names in
// ProcessVmCounters but does not define. The uint32 is padded to the
// next uintptr as in C, so the layout matches on 32 and 64 bits.
type vmCounters struct {
	PeakVirtualSize            uintptr
	VirtualSize                uintptr
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
}

// peakRSS returns this process's peak resident memory in bytes: its peak
// working set, Windows's name for the pages a process has in memory.
func peakRSS() (uint64, error) {
	var c vmCounters
	err := windows.NtQueryInformationProcess(windows.CurrentProcess(), windows.ProcessVmCounters,
		unsafe.Pointer(&c), uint32(unsafe.Sizeof(c)), nil)
	if err != nil {
		return 0, fmt.Errorf("peak RSS: %w", err)
	}
	return uint64(c.PeakWorkingSetSize), nil
}
