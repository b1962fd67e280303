//go:build linux

package proc

import (
	"runtime"
	"syscall"
)

// If lite work dies with no chance to stop its commands (SIGKILL, the OOM
// killer, a crash), Linux sends each command's leader SIGKILL: the
// parent-death signal. It reaches the leader only; what the leader started
// is reparented and lives on unless the leader's own death ends it.

// dieWithParent sets the parent-death signal.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// LockThread pins the calling goroutine to its OS thread until the
// returned unlock; start a command and wait for it in between. Linux sends
// the parent-death signal when the thread that forked the child exits, not
// the process, and Go's runtime ends a thread when a goroutine that locked
// it exits without unlocking. An unpinned fork may run on a thread that
// another goroutine later locks and takes down with it, killing a healthy
// command. A pinned thread serves its goroutine alone and lives until the
// command has been reaped.
func LockThread() (unlock func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}
