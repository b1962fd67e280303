//go:build windows

package proc

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// A job's command runs in a job object of its own, the Windows way to own
// a process tree: every process it starts joins the job, and terminating
// the job ends them all. The command starts suspended and runs only once
// it is in the job, so nothing it starts can escape in between. The job
// kills what is left in it when its last handle closes, so a lite work
// that dies, however it dies, takes its commands with it.
//
// The command also leads a console process group of its own, so that a
// CTRL_BREAK asks the tree to stop, as SIGTERM does on Unix. A command
// without a console ignores it and is terminated after the grace.

// SetTree makes cmd start suspended, leading a new console process group.
func SetTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{
		CreationFlags: windows.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED,
	}
}

// Group is a started command's job object.
type Group struct {
	pid uint32
	job windows.Handle
}

// JoinTree puts the suspended command in a new job object that ends its
// processes when closed, then lets it run.
func JoinTree(cmd *exec.Cmd) (Group, error) {
	g := Group{pid: uint32(cmd.Process.Pid)}
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return g, fmt.Errorf("job object: %w", err)
	}
	g.job = job
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		g.Close()
		return g, fmt.Errorf("job object: %w", err)
	}
	proc, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, g.pid)
	if err != nil {
		g.Close()
		return g, fmt.Errorf("job object: %w", err)
	}
	err = windows.AssignProcessToJobObject(job, proc)
	windows.CloseHandle(proc)
	if err != nil {
		g.Close()
		return g, fmt.Errorf("job object: %w", err)
	}
	if err := resumeThreads(g.pid); err != nil {
		g.Close()
		return g, fmt.Errorf("start in a job object: %w", err)
	}
	return g, nil
}

// resumeThreads resumes the threads of a process created suspended: its
// one main thread, which os/exec does not hand out.
func resumeThreads(pid uint32) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(snap)
	entry := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := false
	for err = windows.Thread32First(snap, &entry); err == nil; err = windows.Thread32Next(snap, &entry) {
		if entry.OwnerProcessID != pid {
			continue
		}
		thread, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, entry.ThreadID)
		if err != nil {
			return err
		}
		_, err = windows.ResumeThread(thread)
		windows.CloseHandle(thread)
		if err != nil {
			return err
		}
		resumed = true
	}
	if !resumed {
		return fmt.Errorf("no thread of process %d found", pid)
	}
	return nil
}

// Stop asks the tree to stop: CTRL_BREAK to its console process group.
func (g Group) Stop() { _ = windows.GenerateConsoleCtrlEvent(windows.CTRL_BREAK_EVENT, g.pid) }

// Kill ends every process in the job.
func (g Group) Kill() { _ = windows.TerminateJobObject(g.job, 1) }

// Close lets go of the job; closing its last handle ends what is left in
// it.
func (g Group) Close() {
	if g.job != 0 {
		windows.CloseHandle(g.job)
	}
}

// LockThread has nothing to pin: the job object, not a thread, owns the
// tree.
func LockThread() (unlock func()) { return func() {} }

// drain has nothing to read on Windows: its pipes take no deadline, so
// Finish closes them, as it must to end a copy.
func drain(io.Writer, *os.File) {}
