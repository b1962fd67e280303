package web

import (
	"context"
	"strconv"
	"strings"

	"github.com/liteq/lite/lite"
)

// workerRow is a worker on the workers page, with the jobs it runs now
// and its pid when its identity is lite's default (host:pid:random).
type workerRow struct {
	lite.WorkerInfo
	PID     int
	Running []*lite.Job
}

// workerRows joins each worker to its running jobs by locked_by, which a
// lease sets to the worker's identity; up to a page of running jobs.
func (s *server) workerRows(ctx context.Context, ws []lite.WorkerInfo) ([]workerRow, error) {
	running, err := s.q.List(ctx, lite.ListFilter{State: lite.StateRunning, OmitBodies: true, Limit: maxPage})
	if err != nil {
		return nil, err
	}
	rows := make([]workerRow, len(ws))
	for i, w := range ws {
		rows[i] = workerRow{WorkerInfo: w, PID: pidOf(w.Identity)}
		for _, j := range running {
			if j.LockedBy == w.Identity {
				rows[i].Running = append(rows[i].Running, j)
			}
		}
	}
	return rows, nil
}

// pidOf is the pid in a default identity, host:pid:random, or 0.
func pidOf(identity string) int {
	parts := strings.Split(identity, ":")
	if len(parts) < 3 {
		return 0
	}
	pid, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// workersView is the workers page.
type workersView struct {
	Workers   []workerRow
	Unhandled []lite.Unhandled
}
