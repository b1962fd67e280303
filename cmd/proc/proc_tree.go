// Package proc runs a command as the root of a process tree that ends with it
// (lite work runs each job's command so, and lite bench its children): the
// tree, its stdin, stdout and stderr, and how it is stopped and killed on
// each system.
package proc

import (
	"context"
	"os/exec"
	"time"
)

// A job's command and everything it starts form a tree that ends with the
// run, whatever ends the run: the leader exiting, a timeout, a lost lease,
// shutdown. The platform files (proc_unix.go with proc_linux.go or
// proc_nolinux.go; proc_windows.go) say how a tree is made and signalled:
//
//	SetTree(cmd)           before Start: make cmd the root of a tree
//	JoinTree(cmd) (Group)  after Start: what reaches the whole tree
//	Group.Stop()           ask the whole tree to stop (SIGTERM, CTRL_BREAK)
//	Group.Kill()           end the whole tree (SIGKILL, TerminateJobObject)
//	Group.Close()          let go of the group once the tree was killed
//	LockThread()           pin the goroutine that starts and reaps the command

// Tree is a started command.
type Tree struct {
	cmd    *exec.Cmd
	group  Group
	exited chan error // Wait's error, once the leader was reaped
}

// StartTree starts cmd as the root of a tree.
func StartTree(cmd *exec.Cmd) (*Tree, error) {
	SetTree(cmd)
	t := &Tree{cmd: cmd, exited: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		unlock := LockThread()
		defer unlock()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		g, err := JoinTree(cmd)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			started <- err
			return
		}
		t.group = g
		started <- nil
		t.exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return t, nil
}

// StopReason says why lite stopped a command before it exited by itself.
type StopReason int

const (
	NotStopped        StopReason = iota
	StoppedByContext             // the handler's context ended: timeout, lost lease
	StoppedByShutdown            // lite work shut down and the grace passed
	StoppedAtOnce                // a second signal
)

// Stops are what may stop a tree before its leader exits.
type Stops struct {
	Ctx      context.Context // the handler's context
	Shutdown <-chan struct{} // lite work shuts down: finish within grace
	Now      <-chan struct{} // stop at once: SIGKILL
	Grace    time.Duration   // to finish at shutdown, and from SIGTERM to SIGKILL
}

// Wait waits for the leader to exit, stopping the tree when s says so:
// SIGTERM, then SIGKILL after the grace. Once the leader is gone it kills
// the rest of the tree. It returns why lite stopped the command, if it did,
// and the leader's Wait error.
func (t *Tree) Wait(s Stops) (StopReason, error) {
	var stopped StopReason
	var finishBy, killAt <-chan time.Time
	done, shutdown, now := s.Ctx.Done(), s.Shutdown, s.Now
	stop := func(why StopReason) {
		if stopped == NotStopped {
			stopped = why
		}
		if killAt == nil {
			t.group.Stop()
			killAt = time.After(s.Grace)
		}
	}
	for {
		select {
		case err := <-t.exited:
			t.group.Kill() // what the leader left behind ends with it
			t.group.Close()
			return stopped, err
		case <-done:
			done = nil
			stop(StoppedByContext)
		case <-shutdown:
			shutdown = nil
			finishBy = time.After(s.Grace)
		case <-finishBy:
			stop(StoppedByShutdown)
		case <-killAt:
			t.group.Kill()
		case <-now:
			now = nil
			if stopped == NotStopped {
				stopped = StoppedAtOnce
			}
			t.group.Kill()
		}
	}
}
