package litetest_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fakeTB is a testing.TB that records failures instead of failing: the
// kit's tests run an assertion on it to see it fail, and the examples use
// it as the t of a test, since an Example gets none. Like testing's own,
// Fatal stops the function it was given (runtime.Goexit), unless
// keepGoing is set, as in fakes that only record.
type fakeTB struct {
	// testing.TB is nil: calling a method fakeTB does not define panics,
	// so a kit that starts to use another one shows up here.
	testing.TB
	keepGoing bool

	ctx      context.Context
	mu       sync.Mutex
	failures []string
	helped   bool // Helper was called
	cleanups []func()
}

// runTB runs test on a fakeTB in a goroutine of its own, as go test runs a
// test, then its cleanups, and returns the fakeTB.
func runTB(test func(tb testing.TB)) *fakeTB {
	return runFake(&fakeTB{}, test)
}

func runFake(f *fakeTB, test func(tb testing.TB)) *fakeTB {
	ctx, cancel := context.WithCancel(context.Background())
	f.ctx = ctx
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer f.cleanup()
		defer cancel() // as testing does, before the cleanups
		test(f)
	}()
	<-done
	return f
}

func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func (f *fakeTB) Helper() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.helped = true
}

func (f *fakeTB) Context() context.Context { return f.ctx }

func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }

func (f *fakeTB) TempDir() string {
	dir, err := os.MkdirTemp("", "litetest-")
	if err != nil {
		panic(err)
	}
	f.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (f *fakeTB) Errorf(format string, args ...any) { f.record(fmt.Sprintf(format, args...)) }

func (f *fakeTB) Fatal(args ...any) {
	f.record(strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	f.stop()
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.record(fmt.Sprintf(format, args...))
	f.stop()
}

func (f *fakeTB) record(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, msg)
}

func (f *fakeTB) stop() {
	if !f.keepGoing {
		runtime.Goexit()
	}
}

// failed reports whether the test failed, and its messages.
func (f *fakeTB) failed() (bool, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.failures) > 0, strings.Join(f.failures, "\n")
}
