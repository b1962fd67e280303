//go:build unix

package demo

import (
	"os"
	"syscall"
)

// How the demo's text names what it does to a worker, in this system's
// terms: os.Process.Kill sends SIGKILL here.
const (
	killSays   = "SIGKILL worker %d"
	freezeSays = "SIGSTOP worker %d"
	thawSays   = "SIGCONT worker %d"
)

// freeze stops p, which keeps its leases and its open file but runs no
// code, until the thaw it returns is called: a stalled process, as a
// debugger, a full swap or a paused VM leaves one.
func freeze(p *os.Process) (thaw func() error, err error) {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		return nil, err
	}
	return func() error { return p.Signal(syscall.SIGCONT) }, nil
}
