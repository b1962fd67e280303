//go:build !windows

package replicate

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive lock on f without waiting: false if another
// process holds it. The lock is flock(2)'s, on a file of its own, so it
// never meets SQLite's fcntl locks on the database, and it goes with the
// process however the process ends.
func tryLock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
