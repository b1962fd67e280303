package web_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestBulkInChromium(t *testing.T) {
	clock := litetest.NewClock(start)
	q := fileQueue(t, clock)
	ids := seed(t, q, clock)
	busyHour(t, q, clock)
	enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "digest", Payload: []byte(`{"week":48}`), Delay: time.Hour})
	ctx, dialogs := browser(t)
	srv := httptest.NewServer(web.Handler(q, web.Options{Now: clock.Now}))
	t.Cleanup(srv.Close)

	t.Run("ticked rows are cancelled after a confirmation that states their count", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/jobs?queue=emails"), chromedp.WaitVisible(`table.jobs`)))
		screenshot(t, ctx, "jobs.png")
		for _, id := range []int64{ids.running, ids.available} {
			is.NoErr(chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`input[name="id"][value="%d"]`, id))))
		}
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button[value="cancel"]`), chromedp.WaitVisible(`button.confirm.cancel`)))
		screenshot(t, ctx, "bulk-confirm.png")
		title, err := chromedp.Run(ctx, chromedp.Text(`h1`))
		is.NoErr(err)
		is.Equal(title, "Cancel 2 jobs?")
		is.Equal(state(t, q, ids.running), lite.StateRunning) // asking changes nothing
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button.confirm.cancel`), chromedp.WaitVisible(`p.outcome`)))
		is.Equal(state(t, q, ids.running), lite.StateCancelled)
		is.Equal(state(t, q, ids.available), lite.StateCancelled)
	})

	t.Run("retry all matching asks with the filter's count", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/jobs?state=dead"), chromedp.WaitVisible(`button[value="retry-all"]`)))
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button[value="retry-all"]`), chromedp.WaitVisible(`button.confirm.retry`)))
		n, err := q.BulkCount(t.Context(), lite.BulkRetry, lite.Filter{States: []lite.State{lite.StateDead}})
		is.NoErr(err)
		title, err := chromedp.Run(ctx, chromedp.Text(`h1`))
		is.NoErr(err)
		is.Equal(title, fmt.Sprintf("Retry %d jobs?", n))
		is.NoErr(chromedp.Do(ctx, chromedp.Click(`button.confirm.retry`), chromedp.WaitVisible(`p.outcome`)))
		left, err := q.BulkCount(t.Context(), lite.BulkRetry, lite.Filter{States: []lite.State{lite.StateDead}})
		is.NoErr(err)
		is.Equal(left, int64(0))
	})

	t.Run("a finished job shows its wait and run and no lease, and the overview its totals", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, ids.running)), chromedp.WaitVisible(`dd.run`)))
		screenshot(t, ctx, "finished-job.png")
		run, err := chromedp.Run(ctx, chromedp.Text(`dd.run`))
		is.NoErr(err)
		is.Equal(run, "1h2m0s") // cancelled after a busy hour
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`tr[data-queue="emails"] td.totals`)))
		screenshot(t, ctx, "overview-totals.png")
		totals, err := chromedp.Run(ctx, chromedp.Text(`tr[data-queue="emails"] td.totals`))
		is.NoErr(err)
		is.Equal(totals, "0 done, 1 dead, 2 cancelled, 1 retried")
		is.Equal(dialogs.Load(), int64(0))
	})
}
