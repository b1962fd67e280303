package proc

import (
	"bytes"
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
	_, _ = io.Copy(dst, src)
}

// Started closes the command's ends in lite, so that lite's reads end once
// the tree's processes are gone.
func (p *Pipes) Started() { closeFiles(p.child) }

// Finish waits for the copies to end, for at most wait: a process that
// moved out of the tree may hold a pipe forever. Then it closes lite's
// ends, which ends a copy still blocked (os.Pipe's files are non-blocking
// on Unix: Close wakes a Read or Write in progress), and waits for the
// copies to return, so that the writers hold all there is.
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
	}
	closeFiles(p.child)
	closeFiles(p.parent)
	<-done
}

// closeFiles closes files; closing one twice does no harm.
func closeFiles(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
