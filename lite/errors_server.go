package lite

import "errors"

// SQLSTATE codes lite acts on. A server driver's errors carry them
// (pgx's *pgconn.PgError has SQLState), so lite reads them without
// importing the driver.
const (
	uniqueViolation      = "23505"
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
	lockNotAvailable     = "55P03"
	diskFull             = "53100"
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
// be retried, and a full disk is ErrFull.
func classifyServer(err error, code string) error {
	switch code {
	case serializationFailure, deadlockDetected, lockNotAvailable:
		return codeError{err, ErrBusy}
	case diskFull:
		return codeError{err, ErrFull}
	}
	return err
}
