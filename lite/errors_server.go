package lite

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
)

// SQLSTATE codes lite acts on. A server driver's errors carry them
// (pgx's *pgconn.PgError has SQLState), so lite reads them without
// importing the driver.
const (
	uniqueViolation       = "23505"
	serializationFailure  = "40001"
	deadlockDetected      = "40P01"
	lockNotAvailable      = "55P03"
	queryCanceled         = "57014" // statement_timeout: see txBounds
	diskFull              = "53100"
	readOnlyTransaction   = "25006"
	insufficientPrivilege = "42501"
)

// sqlState is the SQLSTATE of a server's error, if err carries one.
func sqlState(err error) (string, bool) {
	var coded interface{ SQLState() string }
	if !errors.As(err, &coded) {
		return "", false
	}
	return coded.SQLState(), true
}

// classifyServer adds lite's sentinel to a server error, as classify does
// for SQLite's: a write that lost a race for a lock wrote nothing and may
// be retried, a full disk is ErrFull, and a write the server refuses
// (a read-only transaction or standby, a missing privilege) ErrReadOnly.
func classifyServer(err error, code string) error {
	switch code {
	case serializationFailure, deadlockDetected, lockNotAvailable, queryCanceled:
		return codeError{err, ErrBusy}
	case diskFull:
		return codeError{err, ErrFull}
	case readOnlyTransaction, insufficientPrivilege:
		return codeError{err, ErrReadOnly}
	}
	return err
}

// unreachable reports whether err says the server could not be reached or
// dropped the connection (restarting, a killed backend, no free
// connection slot), rather than refusing the statement. A write that
// failed so may or may not have landed; an owner write is safe to repeat
// all the same, since its guard makes a second landing a no-op.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if code, ok := sqlState(err); ok {
		switch {
		case strings.HasPrefix(code, "08"), // connection exception
			code == "57P01", code == "57P02", code == "57P03", // shutting down, crashed, starting
			code == "53300": // too many connections
			return true
		}
		return false
	}
	var netErr net.Error
	var retryable interface{ SafeToRetry() bool }
	return errors.As(err, &netErr) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || (errors.As(err, &retryable) && retryable.SafeToRetry())
}
