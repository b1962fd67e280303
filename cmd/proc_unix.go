//go:build unix

package cmd

import (
	"os/exec"
	"syscall"
)

// A job's command runs as the leader of a process group of its own, and
// everything it starts (children, their children, whatever it leaves in
// the background) joins that group unless it moves itself out on purpose
// (setsid, setpgid). A signal to the group reaches the whole tree.

// setTree makes cmd, once started, the root of a tree that stopTree and
// killTree reach.
func setTree(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
}

// stopTree asks every process of the tree to stop: SIGTERM.
func stopTree(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }

// killTree ends every process of the tree: SIGKILL. It may be called after
// the leader was reaped: the group's id stays reserved for as long as any
// member lives, and once none does the signal finds no one (ESRCH). Only a
// new process that took the reaped leader's pid and made itself a group
// leader in between could be hit, and pids are handed out in turn, so that
// takes a wrap of the whole pid space within that instant.
func killTree(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGKILL) }

// signalGroup signals the group. The only errors are ESRCH (nothing of the
// tree is left, which is the aim) and EPERM (a member changed its
// credentials, setuid, and lite cannot touch it): neither can be acted on.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
