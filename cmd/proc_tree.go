package cmd

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
//	setTree(cmd)           before Start: make cmd the root of a tree
//	joinTree(cmd) (group)  after Start: what reaches the whole tree
//	group.stop()           ask the whole tree to stop (SIGTERM, CTRL_BREAK)
//	group.kill()           end the whole tree (SIGKILL, TerminateJobObject)
//	group.close()          let go of the group once the tree was killed
//	lockThread()           pin the goroutine that starts and reaps the command

// tree is a started command.
type tree struct {
	cmd    *exec.Cmd
	group  group
	exited chan error // Wait's error, once the leader was reaped
}

// startTree starts cmd as the root of a tree.
func startTree(cmd *exec.Cmd) (*tree, error) {
	setTree(cmd)
	t := &tree{cmd: cmd, exited: make(chan error, 1)}
	started := make(chan error, 1)
	go func() {
		unlock := lockThread()
		defer unlock()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		g, err := joinTree(cmd)
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

// stopReason says why lite stopped a command before it exited by itself.
type stopReason int

const (
	notStopped        stopReason = iota
	stoppedByContext             // the handler's context ended: timeout, lost lease
	stoppedByShutdown            // lite work shut down and the grace passed
	stoppedAtOnce                // a second signal
)

// stops are what may stop a tree before its leader exits.
type stops struct {
	ctx      context.Context // the handler's context
	shutdown <-chan struct{} // lite work shuts down: finish within grace
	now      <-chan struct{} // stop at once: SIGKILL
	grace    time.Duration   // to finish at shutdown, and from SIGTERM to SIGKILL
}

// wait waits for the leader to exit, stopping the tree when s says so:
// SIGTERM, then SIGKILL after the grace. Once the leader is gone it kills
// the rest of the tree. It returns why lite stopped the command, if it did,
// and the leader's Wait error.
func (t *tree) wait(s stops) (stopReason, error) {
	var stopped stopReason
	var finishBy, killAt <-chan time.Time
	done, shutdown, now := s.ctx.Done(), s.shutdown, s.now
	stop := func(why stopReason) {
		if stopped == notStopped {
			stopped = why
		}
		if killAt == nil {
			t.group.stop()
			killAt = time.After(s.grace)
		}
	}
	for {
		select {
		case err := <-t.exited:
			t.group.kill() // what the leader left behind ends with it
			t.group.close()
			return stopped, err
		case <-done:
			done = nil
			stop(stoppedByContext)
		case <-shutdown:
			shutdown = nil
			finishBy = time.After(s.grace)
		case <-finishBy:
			stop(stoppedByShutdown)
		case <-killAt:
			t.group.kill()
		case <-now:
			now = nil
			if stopped == notStopped {
				stopped = stoppedAtOnce
			}
			t.group.kill()
		}
	}
}
