package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

// TestMain makes this test binary a bench child when a test's bench
// starts it as one: a bench starts os.Executable, which under go test is
// this binary, not lite. It reads the arguments benchRun.child gives.
func TestMain(m *testing.M) {
	if len(os.Args) < 2 || os.Args[1] != "bench-child" {
		os.Exit(m.Run())
	}
	c, args := ChildFlags{Sync: "normal"}, os.Args[2:]
	if len(args) == 4 && args[0] == "--sync" {
		c.Sync, args = args[1], args[2:]
	}
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "bench-child: arguments %q\n", os.Args[2:])
		os.Exit(2)
	}
	c.Mode, c.Arg = args[0], args[1]
	if err := Child(context.Background(), c, os.Getenv("LITE_DB"), os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bench-child: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// durableRun is a bench run of the durable figures at tiny sizes, on a
// file with NORMAL, or as runServer makes one (no sync) on the test
// server when LITE_TEST_POSTGRES names one.
func durableRun(t *testing.T, engine string) *benchRun {
	t.Helper()
	flags := &Flags{Duration: time.Minute, Prefill: 300, Samples: 5, Parked: 40, Idle: 200 * time.Millisecond}
	if engine == "postgres" {
		s, err := openPGServer(t.Context(), testServer(t), os.Stderr, func(s string) string { return s })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.close)
		return &benchRun{c: flags, server: s, name: "postgres", refs: map[string]float64{}}
	}
	return &benchRun{c: flags, dir: t.TempDir(), name: "normal", sync: lite.SyncNormal, refs: map[string]float64{}}
}

func TestBenchDurableFigures(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run("jobs of steps run each step once, on "+engine, func(t *testing.T) {
			is := is.New(t)
			r := durableRun(t, engine)
			// The duration is a minute: the drain ends once the 30
			// prefilled jobs (a tenth of --prefill) are done.
			rate, ran, err := r.stepsRate(t.Context(), 16)
			is.NoErr(err)
			is.True(rate > 0)
			is.Equal(ran, int64(30*stepsPerJob)) // no step's fn ran twice, none was skipped
			if engine == "postgres" {
				return // the figure's schema is dropped after it
			}
			q, err := lite.Open(t.Context(), r.dir+"/steps-16.db", lite.Options{})
			is.NoErr(err)
			defer q.Close()
			var done, recorded int
			is.NoErr(q.DB().QueryRowContext(t.Context(), `select count(*) from lite_jobs where state = 'done'`).Scan(&done))
			is.NoErr(q.DB().QueryRowContext(t.Context(), `select count(*) from lite_steps`).Scan(&recorded))
			is.Equal(done, 30)
			is.Equal(recorded, 30*stepsPerJob)
		})

		t.Run("every figure is measured and judged where it has a target, on "+engine, func(t *testing.T) {
			is := is.New(t)
			r := durableRun(t, engine)
			r.c.Duration = 200 * time.Millisecond
			r.refs[plainAt(1)], r.refs[plainAt(256)] = 1000, 1000
			is.NoErr(r.durable(t.Context(), []workerFigure{{concurrency: 1}, {concurrency: 256}}))

			want := []struct{ figure, unit, target string }{
				{"worker, jobs of 10 steps, concurrency 1", "jobs/s", ""},
				{"worker, jobs of 10 steps, concurrency 256", "jobs/s", ">= 0.25x"},
				{"CPU of an idle worker, no job parked", "% of a core", ""},
				{"CPU of an idle worker, 40 jobs sleeping", "% of a core", "<= 1.5x"},
				{"signal from another process, Signal to AwaitSignal's return", "ms p50", "< 20 ms"},
				{"signal from another process, Signal to AwaitSignal's return", "ms p90", ""},
			}
			is.Equal(len(r.rows), len(want))
			for i, row := range r.rows {
				is.Equal(row.Figure, want[i].figure)
				is.Equal(row.Unit, want[i].unit)
				is.Equal(row.Target, want[i].target)
				is.True(row.Value > 0) // measured: an idle Go process uses some CPU in 200 ms
				switch row.Unit {
				case "jobs/s":
					is.True(row.Ratio > 0) // against the plain job's rate at its concurrency
				case "% of a core":
					is.True(row.Value < 100) // idle: not a whole core
				case "ms p50", "ms p90":
					is.True(row.Value < 10_000)
				}
			}
			is.Equal(r.rows[3].Against, "none parked")
			is.True(r.rows[3].Ratio > 0 && r.rows[3].Met != nil) // judged

			if engine == "sqlite" { // a server's schema is dropped after its figure
				q, err := lite.Open(t.Context(), r.dir+"/idle.db", lite.Options{})
				is.NoErr(err)
				defer q.Close()
				stats, err := q.Stats(t.Context())
				is.NoErr(err)
				is.Equal(len(stats), 1)
				is.Equal(stats[0].Sleeping, int64(40)) // every job still sleeps: the idle worker ran none
				is.Equal(stats[0].Counts[lite.StateAvailable], int64(40))
			}
		})
	}
}

// A job the idle worker starts fails the figure: it was to watch a
// worker with nothing due.
func TestBenchIdleFigureFailsWhenAJobIsDue(t *testing.T) {
	is := is.New(t)
	r := durableRun(t, "sqlite")
	q, db, err := r.open(t.Context(), "idle.db")
	is.NoErr(err)
	defer r.close(q, db)
	_, err = q.Enqueue(t.Context(), lite.NewJob{})
	is.NoErr(err)
	_, err = r.idleShare(t.Context(), db)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "it started 1 jobs, where none was due"))
}
