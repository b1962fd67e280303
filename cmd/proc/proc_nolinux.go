//go:build unix && !linux

package proc

import "syscall"

// Elsewhere lite work sets no parent-death signal (FreeBSD has one, not yet
// wired up or tested): the commands of a lite work that was SIGKILLed run
// on.

func dieWithParent(*syscall.SysProcAttr) {}

func LockThread() (unlock func()) { return func() {} }
