package replicate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/litestream"
	"github.com/google/uuid"
)

// syncRetry is how often Sync asks again while no process answers: the
// one that replicated is gone, and a standby takes over.
const syncRetry = 20 * time.Millisecond

// requestTimeout bounds how long the replicating process waits for a
// request's one line.
const requestTimeout = 5 * time.Second

// errNoAnswer means no process answered a request to sync.
var errNoAnswer = errors.New("no process that replicates the file answered")

// errClosed is what Sync returns once Close was called.
var errClosed = errors.New("replicate: closed")

// Sync returns once every commit before it is on the replica: call it
// after an Enqueue or an ack that must survive the loss of the box, or
// give it to lite.Options.AfterCommit, so that every write a caller
// waits on does (that option's doc lists them). It costs a ship (about a millisecond to a local directory, a
// round trip or more over SFTP).
//
// Callers at the same time share one ship: a caller waits for the first
// sync that starts after it called, so many enqueuers or acks waiting
// together cost about one ship per round, not one each.
//
// In a process that stands by, Sync asks the one that replicates the
// file (over loopback), and waits through a takeover. It waits as long
// as ctx lets it: while that process is frozen, or the replica cannot be
// reached, Sync waits until ctx ends.
func (r *Replicator) Sync(ctx context.Context) error {
	for {
		if here, err := r.syncHere(ctx); here {
			return err
		}
		err := r.syncThere(ctx)
		if !errors.Is(err, errNoAnswer) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("replicate: sync: %w (%w)", context.Cause(ctx), err)
		case <-r.done:
			return errClosed
		case <-time.After(syncRetry):
		}
	}
}

// syncHere syncs in this process if it replicates the file; here is
// false if it stands by.
func (r *Replicator) syncHere(ctx context.Context) (here bool, err error) {
	r.mu.Lock()
	if r.db == nil {
		r.mu.Unlock()
		return false, nil
	}
	if r.next == nil {
		r.next = &round{done: make(chan struct{})}
	}
	rd := r.next
	if !r.syncing {
		r.syncing = true
		go r.rounds(r.db)
	}
	r.mu.Unlock()
	select {
	case <-rd.done:
		return true, rd.err
	case <-ctx.Done():
		return true, context.Cause(ctx)
	}
}

// rounds syncs while callers wait: each round takes every caller that
// came before it started.
func (r *Replicator) rounds(db *litestream.DB) {
	for {
		r.mu.Lock()
		rd := r.next
		r.next = nil
		r.syncing = rd != nil
		r.mu.Unlock()
		if rd == nil {
			return
		}
		rd.err = db.SyncAndWait(context.Background())
		close(rd.done)
	}
}

// syncPath is the file in which the process that replicates path says
// how the others ask it to sync: its loopback address and a token. It is
// the lock holder's alone, and readable by the file's owner only.
func syncPath(path string) string { return path + "-litestream.sync" }

// serve answers other processes' requests to sync until stop, which
// removes syncPath.
func (r *Replicator) serve() (stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("replicate: listen for syncs: %w", err)
	}
	token := uuid.NewString()
	tmp := syncPath(r.path) + "." + token[:8]
	err = os.WriteFile(tmp, []byte(l.Addr().String()+" "+token+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, syncPath(r.path))
	}
	if err != nil {
		os.Remove(tmp)
		l.Close()
		return nil, fmt.Errorf("replicate: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { r.answer(ctx, c, token) })
		}
	})
	return func() {
		os.Remove(syncPath(r.path))
		l.Close()
		cancel()
		wg.Wait()
	}, nil
}

// answer reads one request, "TOKEN\n", syncs, and replies "ok\n" or "err
// MESSAGE\n". It hangs up without a reply if this process stops
// replicating first: the caller then asks the next one.
func (r *Replicator) answer(ctx context.Context, c net.Conn, token string) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(requestTimeout))
	line, err := bufio.NewReader(io.LimitReader(c, 128)).ReadString('\n')
	if err != nil || strings.TrimSuffix(line, "\n") != token {
		return
	}
	here, err := r.syncHere(ctx)
	switch {
	case !here, ctx.Err() != nil:
		return
	case err != nil:
		fmt.Fprintf(c, "err %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
	default:
		io.WriteString(c, "ok\n")
	}
}

// syncThere asks the process that replicates the file to sync:
// errNoAnswer if none answered.
func (r *Replicator) syncThere(ctx context.Context) error {
	b, err := os.ReadFile(syncPath(r.path))
	if err != nil {
		return errNoAnswer
	}
	addr, token, _ := strings.Cut(strings.TrimSuffix(string(b), "\n"), " ")
	if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
		return errNoAnswer // half-written, or not ours
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return errNoAnswer
	}
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })()
	if _, err := io.WriteString(c, token+"\n"); err != nil {
		return errNoAnswer
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	switch {
	case line == "ok\n":
		return nil
	case strings.HasPrefix(line, "err "):
		return fmt.Errorf("replicate: sync in the process that replicates: %s", strings.TrimSpace(line[len("err "):]))
	case ctx.Err() != nil:
		return fmt.Errorf("replicate: sync: %w", context.Cause(ctx))
	}
	return errNoAnswer
}
