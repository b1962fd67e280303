package web_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// browser starts headless Chromium for the test, with every JavaScript
// dialog counted (and dismissed, so that a page it opened on cannot hang
// the test). Without Chromium the test is skipped, except in CI, where
// .ci/run installs it.
func browser(t *testing.T) (ctx context.Context, dialogs *atomic.Int64) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but chromium is missing: .ci/run installs it")
		}
		t.Skip("chromium is missing (apt-get install chromium): the browser test was skipped")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()))
	alloc, cancelAlloc := chromedp.NewExecAllocator(t.Context(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	dialogs = new(atomic.Int64)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1100, 460)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Listen(ctx, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			dialogs.Add(1)
			go chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, dialogs
}

// fileQueue opens a queue on a file of its own, on clock: the browser
// tests run on SQLite alone.
func fileQueue(t *testing.T, clock *litetest.Clock) *lite.Queue {
	t.Helper()
	q, err := lite.Open(t.Context(), filepath.Join(t.TempDir(), "lite.db"), lite.Options{Now: clock.Now, Synchronous: lite.SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

// readmeShot is the screenshot the README shows.
const readmeShot = "dashboard.png"

// screenshot saves the page under the test's temp dir and, when it is the
// README's and LITE_SCREENSHOTS names a directory (relative to the
// module's root), there too: LITE_SCREENSHOTS=docs writes docs/dashboard.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
	if dir := os.Getenv("LITE_SCREENSHOTS"); dir != "" && name == readmeShot {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", "..", dir)
		}
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// busyHour fills three queues other than seed's with an hour of work: jobs done and dead
// each minute, a backlog, and one running job.
func busyHour(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
	t.Helper()
	ctx := t.Context()
	for m := range 60 {
		for i, queue := range []string{"billing", "reports", "webhooks"} {
			n := 1 + (m*(i+3))%5
			for k := range n {
				enqueue(t, q, lite.NewJob{Queue: queue, Kind: "send", Payload: []byte(`{}`), MaxAttempts: 1})
				leased, err := q.Lease(ctx, lite.LeaseRequest{Queues: []string{queue}, Max: 1, LockedBy: "host:4242:a1b2"})
				if err != nil || len(leased) != 1 {
					t.Fatalf("lease: %v", err)
				}
				if k == 0 && (m+i)%9 == 0 {
					err = q.AckFailed(ctx, leased[0].Lease(), errors.New("connection refused"))
				} else {
					err = q.AckDone(ctx, leased[0].Lease(), nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		}
		clock.Advance(time.Minute)
	}
	for i := range 40 {
		enqueue(t, q, lite.NewJob{Queue: []string{"billing", "webhooks"}[i%2], Kind: "send", Payload: []byte(`{}`)})
	}
	clock.Advance(12 * time.Second)
}

func TestInChromium(t *testing.T) {
	clock := litetest.NewClock(start)
	q := fileQueue(t, clock)
	ids := seed(t, q, clock)
	busyHour(t, q, clock)
	if err := q.SetLimits(t.Context(), "webhooks", lite.Limits{MaxRunning: 4, Rate: 100, Per: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ctx, dialogs := browser(t)
	srv := httptest.NewServer(web.Handler(q, web.Options{Now: clock.Now}))
	t.Cleanup(srv.Close)

	t.Run("the overview shows each queue's counts", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`tr[data-queue="emails"]`)))
		available, err := chromedp.Run(ctx, chromedp.Text(`tr[data-queue="emails"] td.count.available`))
		is.NoErr(err)
		is.Equal(available, "1")
		running, err := chromedp.Run(ctx, chromedp.Text(`tr[data-queue="emails"] td.count.running`))
		is.NoErr(err)
		is.Equal(running, "1")
		bars, err := chromedp.Run(ctx, chromedp.Nodes(`tr[data-queue="webhooks"] svg.chart rect.done`))
		is.NoErr(err)
		is.Equal(len(bars), 60) // a column a minute
		screenshot(t, ctx, readmeShot)
	})

	t.Run("retry a dead job after confirming", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, ids.dead)), chromedp.WaitVisible(`a.button.retry`)))
		screenshot(t, ctx, "dead-job.png")
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`a.button.retry`), chromedp.WaitVisible(`button.confirm.retry`)))
		is.Equal(state(t, q, ids.dead), lite.StateDead) // asking changes nothing
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button.confirm.retry`), chromedp.WaitVisible(`h1 .state.available`)))
		is.Equal(state(t, q, ids.dead), lite.StateAvailable)
	})

	t.Run("pause a queue from the overview after confirming", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`tr[data-queue="emails"] a.button.pause`)))
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`tr[data-queue="emails"] a.button.pause`), chromedp.WaitVisible(`button.confirm.pause`)))
		paused, _ := flow(t, q, "emails")
		is.True(!paused) // asking changes nothing
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button.confirm.pause`), chromedp.WaitVisible(`tr[data-queue="emails"] .badge.paused`)))
		paused, _ = flow(t, q, "emails")
		is.True(paused)
	})

	t.Run("a hostile job opens no dialog and shows as text", func(t *testing.T) {
		is := is.New(t)
		id := hostileJob(t, q)
		hostileFlow(t, q)
		for _, target := range []string{fmt.Sprintf("/jobs/%d", id), "/jobs", "/", fmt.Sprintf("/jobs/%d/confirm?action=retry", id), "/schedules"} {
			is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+target), chromedp.WaitVisible(`main`)))
		}
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, id)), chromedp.WaitVisible(`pre.payload`)))
		payload, err := chromedp.Run(ctx, chromedp.Text(`pre.payload`))
		is.NoErr(err)
		is.True(strings.HasPrefix(payload, "<script>alert(1)</script></textarea><img src=x onerror=alert(2)>")) // shown, not run
		images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.images.length`))
		is.NoErr(err)
		is.Equal(images, 0) // no <img> was made of the payload
		screenshot(t, ctx, "hostile-job.png")
		is.Equal(dialogs.Load(), int64(0))
	})

	t.Run("a signal sent from the page of a job awaiting it wakes the job", func(t *testing.T) {
		is := is.New(t)
		id := parkedAwaitingApproval(t, q, clock)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, id)), chromedp.WaitVisible(`form.signal`)))
		steps, err := chromedp.Run(ctx, chromedp.Text(`table.steps`))
		is.NoErr(err)
		is.True(strings.Contains(steps, "wait for signal approved, no timeout"))
		is.NoErr(chromedp.Do(ctx, chromedp.SendKeys(`form.signal textarea`, "ok by ada"), chromedp.Click(`button.confirm.signal`), chromedp.WaitVisible(`p.sent`)))
		screenshot(t, ctx, "signalled-job.png")
		j, err := q.Get(t.Context(), id)
		is.NoErr(err)
		is.Equal(j.Parked, "") // woken: the name was filled in with what it awaits
		is.Equal(dialogs.Load(), int64(0))
	})
}
