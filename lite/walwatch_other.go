//go:build !linux

package lite

import "errors"

// watchWAL has no file-change notification to use here; workers poll.
func watchWAL(string) (<-chan struct{}, func(), error) {
	return nil, nil, errors.New("watching the WAL needs Linux inotify")
}
