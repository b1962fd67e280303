package lite

import (
	"context"
	"errors"

	"github.com/fsnotify/fsnotify"
)

// watchWAL reports writes to the database's write-ahead log. Every commit,
// by any process, writes it, so an idle worker can sleep until one comes
// instead of polling. fsnotify uses the OS's own notifications: inotify on
// Linux, kqueue on the BSDs and macOS, ReadDirectoryChangesW on Windows.
func watchWAL(dbPath string) (changes <-chan struct{}, stop func(), err error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, nil, err
	}
	if err := fw.Add(dbPath + "-wal"); err != nil {
		fw.Close()
		return nil, nil, err
	}
	ch := make(chan struct{}, 1)
	report := func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case ev, ok := <-fw.Events:
				if !ok {
					return
				}
				if ev.Has(fsnotify.Write) {
					report()
				}
			case _, ok := <-fw.Errors:
				if !ok {
					return
				}
				// An overflowed or failed watch may have missed a write:
				// the worker looks for itself.
				report()
			}
		}
	}()
	return ch, func() {
		fw.Close()
		<-done
	}, nil
}

// notifyChannel is the channel a server queue's commits notify on: the
// schema's trigger sends on it whenever a job becomes available.
const notifyChannel = "lite_jobs"

// watchCommits reports commits by other processes that may have made a
// job available: writes to the WAL for a file, notifications from the
// server for a server queue.
func (q *Queue) watchCommits() (changes <-chan struct{}, stop func(), err error) {
	if !q.engine.onServer() {
		if q.path == "" {
			return nil, nil, errors.New("no file to watch")
		}
		return watchWAL(q.path)
	}
	ch := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		q.server.Listen(ctx, q.dsn, notifyChannel, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
	}()
	return ch, func() {
		cancel()
		<-done
	}, nil
}
