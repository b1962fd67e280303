//go:build unix

package proc

import (
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// A job's command runs as the leader of a process group of its own, and
// everything it starts (children, their children, whatever it leaves in
// the background) joins that group unless it moves itself out on purpose
// (setsid, setpgid). A signal to the group reaches the whole tree.

// SetTree makes cmd, once started, the root of a tree that its group
// reaches.
func SetTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// Group is a started command's process group, named by its leader's pid.
type Group struct{ pid int }

func JoinTree(cmd *exec.Cmd) (Group, error) { return Group{cmd.Process.Pid}, nil }

// Stop asks every process of the tree to stop: SIGTERM.
func (g Group) Stop() { g.signal(syscall.SIGTERM) }

// Kill ends every process of the tree: SIGKILL. It may be called after the
// leader was reaped: the group's id stays reserved for as long as any
// member lives, and once none does the signal finds no one (ESRCH). Only a
// new process that took the reaped leader's pid and made itself a group
// leader in between could be hit, and pids are handed out in turn, so that
// takes a wrap of the whole pid space within that instant.
func (g Group) Kill() { g.signal(syscall.SIGKILL) }

// Close has nothing to let go of: a group is only a number.
func (g Group) Close() {}

// signal signals the group. The only errors are ESRCH (nothing of the tree
// is left, which is the aim) and EPERM (a member changed its credentials,
// setuid, and lite cannot touch it): neither can be acted on.
func (g Group) signal(sig syscall.Signal) { _ = syscall.Kill(-g.pid, sig) }

// maxDrain bounds what a drain reads: what a pipe can hold (64 KiB by
// default, at most 1 MiB unprivileged), so that a process that moved out
// of the tree and writes on and on cannot keep lite reading.
const maxDrain = 1 << 20

// drain copies to dst what src holds now, without waiting for more: the
// output a finished leader left in its pipe once Finish's wait passed.
func drain(dst io.Writer, src *os.File) {
	if src.SetReadDeadline(time.Time{}) != nil {
		return
	}
	rc, err := src.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 32<<10)
	for read := 0; read < maxDrain; {
		var n int
		var readErr error
		// Returning true never waits: the file is non-blocking, so an
		// empty pipe gives EAGAIN and the drain ends.
		if rc.Read(func(fd uintptr) bool {
			n, readErr = syscall.Read(int(fd), buf)
			return true
		}) != nil || readErr != nil || n <= 0 {
			return
		}
		_, _ = dst.Write(buf[:n])
		read += n
	}
}
