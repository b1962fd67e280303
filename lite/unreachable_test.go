package lite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"
)

type stateError string

func (e stateError) Error() string    { return "server says " + string(e) }
func (e stateError) SQLState() string { return string(e) }

func TestUnreachableTellsAnOutageFromARefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{fmt.Errorf("ack done: %w", driver.ErrBadConn), true},
		{stateError("57P01"), true}, // the server is shutting down
		{stateError("08006"), true}, // the connection failed
		{stateError("53300"), true}, // no connection slot free
		{stateError("23505"), false},
		{stateError("22021"), false},
		{ErrLeaseLost, false},
		{nil, false},
	} {
		if got := unreachable(tc.err); got != tc.want {
			t.Errorf("unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestAnOutcomeOutlivesAShortOutage(t *testing.T) {
	tries := 0
	err := retryBusy(context.Background(), func() error {
		if tries++; tries < 5 {
			return &net.OpError{Op: "dial", Err: errors.New("connection refused")}
		}
		return nil
	})
	if err != nil || tries != 5 {
		t.Fatalf("got %v after %d tries, want success after 5", err, tries)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = retryBusy(ctx, func() error { return stateError("57P03") })
	if !unreachable(err) {
		t.Fatalf("got %v, want the outage's error once the ack's time is up", err)
	}
}
