package web_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

const (
	hostileNote = `<script>alert(1)</script>`
	hostileLine = "<img src=x onerror=alert(2)>\x1b[2J"
)

func TestAJobsProgressShowsOnItsPageAndInTheAPI(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		is := is.New(t)
		id := enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "welcome"})
		l := lease(t, q)
		is.NoErr(q.Report(t.Context(), l, lite.Update{Progress: []byte("0.4"), Note: hostileNote, Lines: []string{hostileLine}}))
		h := handler(q, clock, web.Options{})

		page := get(h, fmt.Sprintf("/jobs/%d", id))
		is.Equal(page.Code, http.StatusOK)
		body := page.Body.String()
		is.True(strings.Contains(body, fmt.Sprintf(`data-refresh="../jobs/%d/live"`, id))) // it refreshes while running
		for _, b := range []string{body, get(h, fmt.Sprintf("/jobs/%d/live", id)).Body.String()} {
			is.True(strings.Contains(b, `<progress max="1" value="0.4"></progress> <span class="value">40%</span>`))
			is.True(!strings.Contains(b, hostileNote) && !strings.Contains(b, "<img"))
			is.True(strings.Contains(b, "&lt;script&gt;alert(1)&lt;/script&gt;"))
			is.True(!strings.Contains(b, "\x1b"))
		}

		var j struct {
			Progress     float64  `json:"progress"`
			ProgressNote string   `json:"progress_note"`
			Log          []string `json:"log"`
		}
		is.NoErr(json.Unmarshal(get(h, fmt.Sprintf("/api/jobs/%d", id)).Body.Bytes(), &j))
		is.Equal(j.Progress, 0.4)
		is.Equal(j.ProgressNote, hostileNote)
		is.Equal(j.Log, []string{hostileLine})

		is.NoErr(q.AckDone(t.Context(), l, nil))
		body = get(h, fmt.Sprintf("/jobs/%d", id)).Body.String()
		is.True(!strings.Contains(body, "data-refresh")) // finished: nothing more to refresh
		is.True(strings.Contains(body, `<span class="value">40%</span>`))
	})
}

func TestProgressMovesOnTheJobPageInChromium(t *testing.T) {
	is := is.New(t)
	q, err := lite.Open(t.Context(), filepath.Join(t.TempDir(), "lite.db"), lite.Options{})
	is.NoErr(err)
	t.Cleanup(func() { q.Close() })
	id := enqueue(t, q, lite.NewJob{Queue: "emails", Kind: "welcome"})
	l := lease(t, q)
	is.NoErr(q.Report(t.Context(), l, lite.Update{Progress: []byte("0.1"), Note: hostileNote, Lines: []string{hostileLine}}))
	ctx, dialogs := browser(t)
	srv := httptest.NewServer(web.Handler(q, web.Options{}))
	t.Cleanup(srv.Close)

	is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d", srv.URL, id)), chromedp.WaitVisible(`p.progress .value`)))
	shown, err := chromedp.Run(ctx, chromedp.Text(`p.progress .value`))
	is.NoErr(err)
	is.Equal(shown, "10%")

	is.NoErr(q.Report(t.Context(), l, lite.Update{Progress: []byte("0.8"), Note: "converting", Lines: []string{"page 8 of 10"}}))
	deadline := time.Now().Add(10 * time.Second) // the page refreshes every two seconds
	for shown != "80%" && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		// A read that lands as the refresh replaces the node finds it gone
		// ("No node with given id found"): the next one reads the new node.
		if text, err := chromedp.Run(ctx, chromedp.Text(`p.progress .value`)); err == nil {
			shown = text
		}
	}
	is.Equal(shown, "80%")
	bar, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.querySelector("p.progress progress").value`))
	is.NoErr(err)
	is.Equal(bar, 0.8)
	log, err := chromedp.Run(ctx, chromedp.Text(`pre.log`))
	is.NoErr(err)
	is.True(strings.Contains(log, "<img src=x onerror=alert(2)>") && strings.Contains(log, "page 8 of 10"))
	images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.images.length`))
	is.NoErr(err)
	is.Equal(images, 0)
	screenshot(t, ctx, "job-progress.png")
	is.Equal(dialogs.Load(), int64(0))
}
