//go:build windows

package cmd

import "os/exec"

// Windows has no process groups to signal. Until lite work puts each
// command in a job object, stopping a command ends its own process only:
// what it started may outlive it, and there is no polite stop before the
// kill.

func setTree(*exec.Cmd) {}

func stopTree(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func killTree(cmd *exec.Cmd) { _ = cmd.Process.Kill() }

func lockThread() (unlock func()) { return func() {} }
