//go:build unix

package lite

import (
	"os"
	"syscall"
)

// SQLite's lock bytes in a database file (see its os_unix.c): the pending
// byte, the reserved byte, then the shared range, 512 bytes in all.
const (
	sqliteLockFirst = 0x40000000
	sqliteLockBytes = 512
)

// heldElsewhere says whether another process holds one of SQLite's locks
// on the file at path: every connection to a WAL database holds a shared
// one while it is open. It asks without taking one (F_GETLK); the file
// it opens for that is closed again, which would drop this process's own
// locks on it, so it is called before this process opens the database.
func heldElsewhere(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: sqliteLockFirst, Len: sqliteLockBytes}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return false, err
	}
	return lk.Type != syscall.F_UNLCK, nil
}
