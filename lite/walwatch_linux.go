//go:build linux

package lite

import (
	"os"
	"syscall"
)

// watchWAL reports writes to the database's write-ahead log. Every commit,
// by any process, writes it, so an idle worker can sleep until one comes
// instead of polling. The inotify descriptor is non-blocking, so the
// runtime's poller serves its reads and closing it ends the reader.
func watchWAL(dbPath string) (changes <-chan struct{}, stop func(), err error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, nil, err
	}
	if _, err := syscall.InotifyAddWatch(fd, dbPath+"-wal", syscall.IN_MODIFY); err != nil {
		syscall.Close(fd)
		return nil, nil, err
	}
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}()
	return ch, func() {
		f.Close()
		<-done
	}, nil
}
