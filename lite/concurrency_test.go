package lite_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/matryer/is"
)

// TestMain lets the test binary act as a second process on a shared file.
func TestMain(m *testing.M) {
	if path := os.Getenv("LITE_TEST_PACED_ENQUEUER"); path != "" {
		if err := pacedEnqueue(path); err != nil {
			fmt.Fprintln(os.Stderr, "paced enqueuer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv("LITE_TEST_ENQUEUER"); path != "" {
		q, err := lite.Open(context.Background(), path, lite.Options{})
		if err == nil {
			var id int64
			id, err = q.Enqueue(context.Background(), lite.NewJob{Payload: []byte("from another process")})
			fmt.Println(id)
			q.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "enqueuer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv("LITE_TEST_HOLDER"); path != "" {
		// Holds the file open, as a worker does, until stdin closes.
		q, err := lite.Open(context.Background(), path, lite.Options{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "holder:", err)
			os.Exit(1)
		}
		fmt.Println("open")
		io.Copy(io.Discard, os.Stdin)
		q.Close()
		os.Exit(0)
	}
	if path := os.Getenv("LITE_TEST_LEASER"); path != "" {
		if err := leaseUntilEmpty(path, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "leaser:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(litetest.Main(m))
}

// leaseUntilEmpty leases and acks jobs from the file until none is left,
// printing "id generation" for every lease it got. It gives up after more
// leases than the file has jobs: a queue that hands out a job twice must
// fail, not spin.
func leaseUntilEmpty(path string, out *os.File) error {
	limit, err := strconv.Atoi(os.Getenv("LITE_TEST_LEASE_LIMIT"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	q, err := lite.Open(ctx, path, lite.Options{Synchronous: lite.SyncNormal})
	if err != nil {
		return err
	}
	defer q.Close()
	w := bufio.NewWriter(out)
	defer w.Flush()
	for {
		jobs, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{"q"}, Max: 7})
		if err != nil {
			return err
		}
		if len(jobs) == 0 {
			return nil
		}
		if limit -= len(jobs); limit < 0 {
			return errors.New("leased more jobs than the file holds")
		}
		for _, j := range jobs {
			fmt.Fprintf(w, "%d %d\n", j.ID, j.Generation)
			if err := q.AckDone(ctx, j.Lease(), []byte(strconv.Itoa(os.Getpid()))); err != nil {
				return err
			}
		}
	}
}

func enqueueN(t *testing.T, q *lite.Queue, n int) {
	t.Helper()
	jobs := make([]lite.NewJob, n)
	for i := range jobs {
		jobs[i] = lite.NewJob{Queue: "q", Payload: []byte(strconv.Itoa(i))}
	}
	if _, err := q.EnqueueBatch(t.Context(), jobs); err != nil {
		t.Fatal(err)
	}
}

// leaseAll drains n jobs from several goroutines over the given queues
// (one shared, or one per goroutine) and returns how often each id was
// leased. It stops at n leases, so a queue that hands a job out twice
// fails the test instead of spinning.
func leaseAll(t *testing.T, queues []*lite.Queue, goroutines, n int) map[int64]int {
	var (
		mu     sync.Mutex
		total  int
		leased = map[int64]int{}
		wg     sync.WaitGroup
		errs   = make(chan error, goroutines)
	)
	for g := range goroutines {
		q := queues[g%len(queues)]
		wg.Go(func() {
			for {
				jobs, err := q.Lease(t.Context(), lite.LeaseRequest{Queues: []string{"q"}, Max: 1 + g%5})
				if err != nil {
					errs <- err
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				total += len(jobs)
				over := total > n
				for _, j := range jobs {
					leased[j.ID]++
				}
				mu.Unlock()
				if over {
					errs <- fmt.Errorf("leased over %d jobs, but only %d exist", total, n)
					return
				}
				for _, j := range jobs {
					if err := q.AckDone(t.Context(), j.Lease(), nil); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return leased
}

func assertEachOnceAndDone(t *testing.T, q *lite.Queue, leased map[int64]int, n int) {
	t.Helper()
	is := is.New(t)
	is.Equal(len(leased), n)
	for id, times := range leased {
		if times != 1 {
			t.Fatalf("job %d leased %d times", id, times)
		}
	}
	stats, err := q.Stats(t.Context())
	is.NoErr(err)
	is.Equal(stats[0].Counts, map[lite.State]int64{lite.StateDone: int64(n)})
}

// fast skips the fsync per commit: these tests are about exclusion, not
// durability, and thousands of fsyncs would dominate their time.
var fast = lite.Options{Synchronous: lite.SyncNormal}

// scaled is n, or a fifth of it under the race detector.
func scaled(n int) int {
	if raceEnabled {
		return n / 5
	}
	return n
}

func TestConcurrentLeasing(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		n := scaled(1000)

		t.Run("many goroutines on one queue lease every job exactly once", func(t *testing.T) {
			q, _ := e.open(t, fast)
			enqueueN(t, q, n)
			assertEachOnceAndDone(t, q, leaseAll(t, []*lite.Queue{q}, 16, n), n)
		})

		t.Run("two queues on one database in one process lease every job exactly once", func(t *testing.T) {
			q, dsn := e.open(t, fast)
			other := mustOpenOpts(t, dsn, fast)
			enqueueN(t, q, n)
			assertEachOnceAndDone(t, q, leaseAll(t, []*lite.Queue{q, other}, 8, n), n)
		})
	})
}

func TestTwoProcessesLeaseEachJobOnce(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		if testing.Short() {
			t.Skip("starts processes")
		}
		is := is.New(t)
		q, dsn := e.open(t, fast)
		n := scaled(2000)
		enqueueN(t, q, n)

		exe, err := os.Executable()
		is.NoErr(err)
		var outs [2]bytes.Buffer
		var cmds [2]*exec.Cmd
		for i := range cmds {
			cmds[i] = exec.CommandContext(t.Context(), exe)
			cmds[i].Env = append(os.Environ(), "LITE_TEST_LEASER="+dsn, "LITE_TEST_LEASE_LIMIT="+strconv.Itoa(n))
			cmds[i].Stdout = &outs[i]
			cmds[i].Stderr = os.Stderr
			is.NoErr(cmds[i].Start())
		}
		for _, c := range cmds {
			is.NoErr(c.Wait())
		}

		leased := map[int64]int{}
		for _, out := range outs {
			for line := range strings.Lines(out.String()) {
				var id, gen int64
				if _, err := fmt.Sscan(line, &id, &gen); err != nil {
					t.Fatalf("bad line %q: %v", line, err)
				}
				is.Equal(gen, int64(1)) // nothing was ever reclaimed or released
				leased[id]++
			}
		}
		assertEachOnceAndDone(t, q, leased, n)
	})
}
