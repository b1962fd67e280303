package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

func TestBenchRunsReportTheMedianAndRangeAndJudgeTheMedian(t *testing.T) {
	is := is.New(t)
	run := func(rate, ratio, p99 float64) []Row {
		r := &benchRun{name: "normal", refs: map[string]float64{"R2": rate / ratio}}
		r.ratio("worker", rate, "R2", 0.5)
		lat := slices.Repeat([]time.Duration{time.Millisecond}, 98) // p99 of 100 samples is the 99th
		lat = append(lat, time.Duration(p99*float64(time.Millisecond)), time.Second)
		r.addLatency("latency", lat, 0, 2)
		return r.rows
	}
	// One run misses the ratio target by far and one the latency target:
	// the medians meet both.
	rows := combineRuns([][]Row{run(100, 0.6, 1), run(300, 0.2, 1.5), run(200, 0.7, 9)})
	is.Equal(len(rows), 3) // the worker, the latency's p50 and p99
	worker, p99 := rows[0], rows[2]
	is.Equal(worker.Runs, 3)
	is.Equal([]float64{worker.Value, worker.Min, worker.Max}, []float64{200, 100, 300})
	is.Equal([]float64{worker.Ratio, worker.RatioMin, worker.RatioMax}, []float64{0.6, 0.2, 0.7})
	is.True(*worker.Met)
	is.Equal(p99.Unit, "ms p99")
	is.Equal([]float64{p99.Value, p99.Min, p99.Max}, []float64{1.5, 1, 9})
	is.True(*p99.Met)

	var out bytes.Buffer
	is.NoErr(Print(&out, rows))
	is.True(strings.Contains(out.String(), "median [lowest–highest] of 3 runs"))
	is.True(strings.Contains(out.String(), "200.0 [100.0–300.0]"))
	is.True(strings.Contains(out.String(), "0.60x [0.20–0.70] R2"))
}

func TestBenchRunsOfAnEvenCountTakeTheMiddleTwo(t *testing.T) {
	is := is.New(t)
	row := func(v float64) []Row { return []Row{{Figure: "f", Value: v, Unit: "jobs/s"}} }
	rows := combineRuns([][]Row{row(4), row(1), row(2), row(10)})
	is.Equal(rows[0].Value, 3.0)
	is.Equal(rows[0].Met, (*bool)(nil)) // no target, no verdict
}

func TestBenchOneRunPrintsNoRange(t *testing.T) {
	is := is.New(t)
	r := &benchRun{name: "full", refs: map[string]float64{"raw insert": 100}}
	r.ratio("enqueue", 50, "raw insert", 0.9)
	var out bytes.Buffer
	is.NoErr(Print(&out, combineRuns([][]Row{r.rows})))
	is.True(!strings.Contains(out.String(), "["))
	is.True(strings.Contains(out.String(), "0.50x raw insert"))
	is.True(strings.Contains(out.String(), "NO")) // 0.5 < 0.9
}

func TestBenchPrefillGrowsWithTheDuration(t *testing.T) {
	is := is.New(t)
	prefill := func(sync lite.Synchronous, d time.Duration) int {
		return (&benchRun{c: &Flags{Duration: d}, sync: sync}).prefill()
	}
	for _, sync := range []lite.Synchronous{lite.SyncNormal, lite.SyncFull} {
		is.Equal(prefill(sync, 2*time.Second), 2*prefill(sync, time.Second))
		is.Equal(prefill(sync, 10*time.Second), 10*prefill(sync, time.Second))
	}
}

// R2 on a fast machine drains its prefill before --duration ends: the
// figure ends there, with the rate of the time the jobs lasted, rather
// than failing the whole bench.
func TestBenchRawBatchedThatRunsOutEndsThere(t *testing.T) {
	is := is.New(t)
	db, err := openRaw(t.Context(), t.TempDir(), lite.SyncNormal)
	is.NoErr(err)
	defer db.Close()
	start := time.Now()
	rate, err := rawBatched(t.Context(), db, time.Hour, 250)
	is.NoErr(err)
	is.True(time.Since(start) < time.Hour) // it did not idle out the duration
	is.True(rate > 0)
	var done int
	is.NoErr(db.QueryRowContext(t.Context(), `select count(*) from jobs where state = 'done'`).Scan(&done))
	is.Equal(done, 250) // every prefilled job, the last short batch too
}

// Flags that would measure nothing are refused before anything runs: a
// zero --duration made every reference 0 jobs/s and every ratio +Inf, a
// zero --samples panicked, a zero --drain-jobs waited out an hour.
func TestBenchRefusesFlagsThatMeasureNothing(t *testing.T) {
	valid := func() Flags {
		return Flags{Duration: time.Second, Processes: 4, BigRows: 10, Samples: 5, DrainJobs: 10, Runs: 1, Parked: 10, Idle: time.Second}
	}
	ok := valid()
	if err := ok.Validate(); err != nil {
		t.Fatalf("the defaults' shape is refused: %v", err)
	}
	for flag, set := range map[string]func(*Flags){
		"--duration 0s":  func(c *Flags) { c.Duration = 0 },
		"--duration -1s": func(c *Flags) { c.Duration = -time.Second },
		"--samples 0":    func(c *Flags) { c.Samples = 0 },
		"--samples -1":   func(c *Flags) { c.Samples = -1 },
		"--drain-jobs 0": func(c *Flags) { c.DrainJobs = 0 },
		"--processes 0":  func(c *Flags) { c.Processes = 0 },
		"--processes -2": func(c *Flags) { c.Processes = -2 },
		"--big-rows -1":  func(c *Flags) { c.BigRows = -1 },
		"--prefill -1":   func(c *Flags) { c.Prefill = -1 },
		"--runs 0":       func(c *Flags) { c.Runs = 0 },
		"--parked 0":     func(c *Flags) { c.Parked = 0 },
		"--idle 0s":      func(c *Flags) { c.Idle = 0 },
	} {
		c := valid()
		set(&c)
		err := c.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), strings.Fields(flag)[0]+" ") {
			t.Errorf("%s: got %v, want a refusal that names the flag", flag, err)
		}
	}
}

// A reference that measured nothing gives no ratio and no verdict, not
// +Inf judged as met.
func TestBenchRatioToAReferenceOfNothingIsNotJudged(t *testing.T) {
	is := is.New(t)
	r := &benchRun{name: "normal", refs: map[string]float64{"R1": 0}}
	r.ratio("worker", 600, "R1", 1)
	r.ratio("worker, unknown reference", 600, "R9", 1)
	for _, row := range r.rows {
		is.Equal(row.Ratio, 0.0)
		is.Equal(row.Met, (*bool)(nil))
	}
	var out bytes.Buffer
	is.NoErr(Print(&out, r.rows))
	is.True(!strings.Contains(out.String(), "Inf"))
	is.True(!strings.Contains(out.String(), "yes"))
}

// The processes figure fails when its children emptied the queue: their
// rate would be the prefill's over --duration, not theirs.
func TestBenchProcessesThatEmptiedTheQueueFail(t *testing.T) {
	is := is.New(t)
	r := &benchRun{c: &Flags{Duration: time.Second, Prefill: 2}, dir: t.TempDir(), name: "normal", sync: lite.SyncNormal}
	q, db, err := r.open(t.Context(), "procs.db")
	is.NoErr(err)
	defer r.close(q, db)
	_, err = q.Enqueue(t.Context(), lite.NewJob{})
	is.NoErr(err)
	is.NoErr(r.ranOut(t.Context(), q, 4)) // a job still waits

	jobs, err := q.Lease(t.Context(), lite.LeaseRequest{})
	is.NoErr(err)
	is.NoErr(q.AckDone(t.Context(), jobs[0].Lease(), nil))
	err = r.ranOut(t.Context(), q, 4)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "raise --prefill"))
}

// Two benches given one --dir each write into a new directory of their
// own: the second used to open the first's files and run over its jobs.
func TestBenchesInOneDirNeverShareFiles(t *testing.T) {
	is := is.New(t)
	parent := t.TempDir()
	first, err := benchDir(parent)
	is.NoErr(err)
	is.NoErr(os.WriteFile(filepath.Join(first, "worker-1.db"), []byte("left over"), 0o600))
	second, err := benchDir(parent)
	is.NoErr(err)
	is.True(first != second)
	is.Equal(filepath.Dir(second), parent)
	left, err := os.ReadDir(second)
	is.NoErr(err)
	is.Equal(len(left), 0)
}
