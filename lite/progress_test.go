package lite_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestAHandlersProgressRidesTheHeartbeat(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		reported, finish := make(chan struct{}), make(chan struct{})
		w, ev, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			is.NoErr(lite.SetProgress(ctx, 0.4, "converting"))
			is.NoErr(lite.Log(ctx, "first", "second\nthird"))
			close(reported)
			<-finish
			is.NoErr(lite.SetProgress(ctx, map[string]int{"pages": 9}, ""))
			is.NoErr(lite.Log(ctx, "last"))
			return nil
		})
		runWorker(t, w)
		<-reported

		j := mustGet(t, q, id)
		is.Equal(j.Progress, nil) // recorded in memory: no write of its own
		is.Equal(len(j.Log), 0)

		is.NoErr(w.Heartbeat(ctx))
		j = mustGet(t, q, id)
		is.Equal(string(j.Progress), "0.4")
		is.Equal(j.ProgressNote, "converting")
		is.Equal(j.Log, []string{"first", "second", "third"})

		close(finish)
		ev.await(t, lite.EventDone)
		j = mustGet(t, q, id) // the ack's write carried what came after the beat
		is.Equal(string(j.Progress), `{"pages":9}`)
		is.Equal(j.ProgressNote, "")
		is.Equal(j.Log, []string{"first", "second", "third", "last"})
	})
}

func TestAHandlerWhoseLeaseWasLostHasItsProgressRefused(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.mustOpen(t, newFakeClock())
		ctx := t.Context()
		id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
		reported, refused := make(chan struct{}), make(chan error, 1)
		w, _, _ := testWorker(t, q, lite.WorkerOptions{})
		w.Handle(lite.AnyKind, func(ctx context.Context, job *lite.Job) error {
			is.NoErr(lite.SetProgress(ctx, 0.1, "stale"))
			close(reported)
			<-ctx.Done()
			refused <- lite.Log(ctx, "after the loss")
			return ctx.Err()
		})
		runWorker(t, w)
		<-reported
		is.NoErr(q.Cancel(ctx, id)) // cancelled, so that no new run leases it

		is.NoErr(w.Heartbeat(ctx)) // finds the lease lost: nothing is written
		is.True(errors.Is(<-refused, lite.ErrLeaseLost))
		j := mustGet(t, q, id)
		is.Equal(j.Progress, nil)
		is.Equal(len(j.Log), 0)
	})
}

func TestReportRefusesWhatIsNotProgress(t *testing.T) {
	is := is.New(t)
	q, _ := mustOpen(t, newFakeClock())
	mustEnqueue(t, q, lite.NewJob{Queue: "q"})
	l := mustLeaseOne(t, q, "q").Lease()
	is.True(q.Report(t.Context(), l, lite.Update{Progress: []byte("{")}) != nil)
	big, _ := json.Marshal(strings.Repeat("x", lite.MaxProgressBytes))
	is.True(errors.Is(q.Report(t.Context(), l, lite.Update{Progress: big}), lite.ErrTooLarge))
	_, err := lite.Fraction(1.5)
	is.True(err != nil)
	is.Equal(lite.SetProgress(t.Context(), 0.5, ""), lite.ErrNotRunning)
}

func TestAJobsLogKeepsItsBound(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		for _, sync := range []lite.Synchronous{lite.SyncFull, lite.SyncNormal} {
			t.Run(fmt.Sprintf("100k lines keep the latest %d lines and %d bytes, synchronous %v", lite.MaxLogLines, lite.MaxLogBytes, sync), func(t *testing.T) {
				is := is.New(t)
				q, dsn := e.open(t, lite.Options{Synchronous: sync})
				ctx := t.Context()
				id := mustEnqueue(t, q, lite.NewJob{Queue: "q"})
				l := mustLeaseOne(t, q, "q").Lease()
				long := strings.Repeat("é", lite.MaxLogLine) // cut at a rune
				for batch := range 100 {
					lines := make([]string, 1000)
					for i := range lines { // long lines first, to test the bytes' bound
						lines[i] = fmt.Sprintf("line %d %s", batch*1000+i, long[:max(0, 50-batch)*20])
					}
					is.NoErr(q.Report(ctx, l, lite.Update{Lines: lines}))
				}
				is.NoErr(q.Report(ctx, l, lite.Update{Lines: []string{long}}))

				j := mustGet(t, q, id)
				is.Equal(len(j.Log), lite.MaxLogLines)
				is.True(strings.HasPrefix(j.Log[len(j.Log)-2], "line 99999 "))
				last := j.Log[len(j.Log)-1]
				is.True(len(last) <= lite.MaxLogLine && strings.HasSuffix(last, "…"))
				bytes := `select length(cast(log_tail as blob)) from lite_jobs where id = ?`
				if e.name == "postgres" {
					bytes = `select octet_length(log_tail) from lite_jobs where id = ?`
				}
				var kept int
				is.NoErr(q.DB().QueryRowContext(ctx, q.Rebind(bytes), id).Scan(&kept))
				is.True(kept <= lite.MaxLogBytes)
				is.True(kept > lite.MaxLogBytes-lite.MaxLogLine-1) // cut at a line
				if e.name == "sqlite" {
					info, err := os.Stat(dsn)
					is.NoErr(err)
					is.True(info.Size() < 1<<20) // the file did not grow with the lines
				}
			})
		}
	})
}

func TestPercentIsAFractionRoundedToATenth(t *testing.T) {
	is := is.New(t)
	for raw, want := range map[string]float64{"0.07": 7, "0.4": 40, "1": 100, "0.12345": 12.3} {
		pct, ok := (&lite.Job{Progress: []byte(raw)}).Percent()
		is.True(ok)
		is.Equal(pct, want)
	}
	for _, raw := range []string{"1.5", `"half"`, `{"page":3}`} {
		_, ok := (&lite.Job{Progress: []byte(raw)}).Percent()
		is.True(!ok)
	}
}
