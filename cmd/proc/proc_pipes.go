package proc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Pipes connect a command to its job: the payload on its stdin, its stdout
// and stderr copied to writers. lite makes them itself rather than letting
// os/exec do it, because os/exec's Wait also waits for its copies to end,
// and they end only when every process holding a pipe has closed it: a
// background child left holding stdout would keep a finished command
// running. With plain files, Wait returns when the leader exits; lite
// then ends the rest of the tree and reads what it wrote until then.
type Pipes struct {
	child  []*os.File // the command's ends, closed in lite once it started
	parent []*os.File // lite's ends
	copies sync.WaitGroup
}

// AttachPipes sets cmd's stdin, stdout and stderr.
func AttachPipes(cmd *exec.Cmd, stdin []byte, stdout, stderr io.Writer) (*Pipes, error) {
	var ends []*os.File // read and write end of stdin, stdout, stderr
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ends)
			return nil, err
		}
		ends = append(ends, r, w)
	}
	inR, inW, outR, outW, errR, errW := ends[0], ends[1], ends[2], ends[3], ends[4], ends[5]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	p := &Pipes{child: []*os.File{inR, outW, errW}, parent: []*os.File{inW, outR, errR}}
	p.copies.Add(3)
	go func() {
		defer p.copies.Done()
		// A command need not read its stdin: the write error that gets
		// (EPIPE) is no failure of the job.
		_, _ = io.Copy(inW, bytes.NewReader(stdin))
		_ = inW.Close()
	}()
	go p.copy(stdout, outR)
	go p.copy(stderr, errR)
	return p, nil
}

func (p *Pipes) copy(dst io.Writer, src *os.File) {
	defer p.copies.Done()
	if _, err := io.Copy(dst, src); errors.Is(err, os.ErrDeadlineExceeded) {
		drain(dst, src)
	}
}

// Started closes the command's ends in lite, so that lite's reads end once
// the tree's processes are gone.
func (p *Pipes) Started() { closeFiles(p.child) }

// Finish waits for the copies to end, for at most wait: a process that
// moved out of the tree may hold a pipe forever. Then it ends the copies
// still running and waits for them to return, so that the writers hold
// all there is. A copy of output ends once it has read what the pipe holds
// already: on a loaded machine (or in a lite work stopped by SIGSTOP) the
// wait can pass before a copy has read what the leader wrote before it
// exited, and closing the pipe then would lose that output, storing an
// empty or cut result for a command that succeeded.
func (p *Pipes) Finish(wait time.Duration) {
	done := make(chan struct{})
	go func() {
		p.copies.Wait()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		closeFiles(p.child)
		_ = p.parent[0].Close() // stdin: what the command did not read is not wanted
		for _, out := range p.parent[1:] {
			// A deadline wakes a Read in progress (os.Pipe's files are
			// non-blocking on Unix) and the copy drains the pipe; where
			// pipes take no deadline, Close wakes it instead.
			if out.SetReadDeadline(time.Now()) != nil {
				_ = out.Close()
			}
		}
	}
	<-done
	closeFiles(p.child)
	closeFiles(p.parent)
}

// closeFiles closes files; closing one twice does no harm.
func closeFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
