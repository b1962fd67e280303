package lite

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// maxGroup caps how many acks one group commit holds.
const maxGroup = 512

// ackRequest is one done-ack waiting for a group commit.
type ackRequest struct {
	done  Done
	reply chan error
}

// completer group-commits done-acks: it writes every ack already waiting
// in one transaction, so that under load a commit (and, with SyncFull, an
// fsync) serves many jobs, and an idle worker's ack waits for nothing.
type completer struct {
	q    *Queue
	reqs chan ackRequest
	done chan struct{}

	mu     sync.RWMutex // held shared by acks in flight, exclusively by stop
	closed bool
}

// errCompleterStopped sends an ack the direct way: its worker stopped, as
// it does before a handler that ignored shutdown returns.
var errCompleterStopped = errors.New("completer stopped")

func (q *Queue) startCompleter() *completer {
	c := &completer{q: q, reqs: make(chan ackRequest, maxGroup), done: make(chan struct{})}
	go c.run()
	return c
}

// ack queues a done-ack and waits until its transaction committed.
func (c *completer) ack(l Lease, result []byte) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return errCompleterStopped
	}
	reply := make(chan error, 1)
	c.reqs <- ackRequest{done: Done{Lease: l, Result: result}, reply: reply}
	return <-reply
}

// stop ends the completer once every queued ack is written; later acks
// get errCompleterStopped.
func (c *completer) stop() {
	c.mu.Lock()
	c.closed = true
	close(c.reqs)
	c.mu.Unlock()
	<-c.done
}

func (c *completer) run() {
	defer close(c.done)
	for first := range c.reqs {
		group := []ackRequest{first}
	gather:
		for len(group) < maxGroup {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break gather
				}
				group = append(group, r)
			default:
				break gather
			}
		}
		c.commit(group)
	}
}

func (c *completer) commit(group []ackRequest) {
	acks := make([]Done, len(group))
	for i, r := range group {
		acks[i] = r.done
	}
	// Acks run after their handlers ended, whatever the worker's context.
	ctx, cancel := context.WithTimeout(context.Background(), ackTimeout)
	defer cancel()
	results, err := c.q.AckDoneMany(ctx, acks)
	for i, r := range group {
		switch {
		case err != nil:
			r.reply <- err
		case results[i] != nil:
			r.reply <- fmt.Errorf("ack done: %w", results[i])
		default:
			r.reply <- nil
		}
	}
}
