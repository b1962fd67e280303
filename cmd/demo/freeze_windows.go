package demo

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// How the demo's text names what it does to a worker, in this system's
// terms: os.Process.Kill calls TerminateProcess here, and there is no
// SIGSTOP, so freeze suspends the process's threads.
const (
	killSays   = "TerminateProcess worker %d"
	freezeSays = "SuspendThread on worker %d's threads"
	thawSays   = "ResumeThread on worker %d's threads"
)

// suspendThread is kernel32's SuspendThread, documented and present in
// every Windows, which x/sys/windows does not wrap (it has ResumeThread).
// It is loaded the way x/sys loads its own functions.
var suspendThread = windows.NewLazySystemDLL("kernel32.dll").NewProc("SuspendThread")

// freeze stops p, which keeps its leases and its open file but runs no
// code, until the thaw it returns is called: it suspends every thread of
// the process, and thaw resumes those it suspended.
func freeze(p *os.Process) (thaw func() error, err error) {
	var suspended []windows.Handle
	thaw = func() error {
		var errs []error
		for _, h := range suspended {
			if _, err := windows.ResumeThread(h); err != nil {
				errs = append(errs, err)
			}
			windows.CloseHandle(h)
		}
		suspended = nil
		return errors.Join(errs...)
	}
	// A thread not yet suspended can start another, so look again until a
	// look finds no thread that the previous ones did not.
	seen := map[uint32]bool{}
	for fresh := true; fresh; {
		fresh = false
		ids, err := threadsOf(uint32(p.Pid))
		if err != nil {
			return nil, errors.Join(err, thaw())
		}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id], fresh = true, true
			h, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, id)
			if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
				continue // the thread exited since the snapshot
			}
			if err != nil {
				return nil, errors.Join(fmt.Errorf("open thread %d of pid %d: %w", id, p.Pid, err), thaw())
			}
			if r, _, err := suspendThread.Call(uintptr(h)); uint32(r) == 0xFFFFFFFF {
				windows.CloseHandle(h)
				return nil, errors.Join(fmt.Errorf("suspend thread %d of pid %d: %w", id, p.Pid, err), thaw())
			}
			suspended = append(suspended, h)
		}
	}
	if len(suspended) == 0 {
		return nil, fmt.Errorf("suspend pid %d: it has no threads", p.Pid)
	}
	return thaw, nil
}

// threadsOf lists the ids of the threads of process pid.
func threadsOf(pid uint32) ([]uint32, error) {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	defer windows.CloseHandle(snap)
	var ids []uint32
	t := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	for err = windows.Thread32First(snap, &t); err == nil; err = windows.Thread32Next(snap, &t) {
		if t.OwnerProcessID == pid {
			ids = append(ids, t.ThreadID)
		}
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return ids, nil
}
