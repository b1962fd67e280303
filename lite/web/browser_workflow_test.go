package web_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestWorkflowPagesInChromium(t *testing.T) {
	clock := litetest.NewClock(start)
	q := fileQueue(t, clock)
	wf, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
		{Name: "fetch", Job: lite.NewJob{Kind: "fetch", Payload: []byte(hostile)}},
		{Name: "small", Job: lite.NewJob{Kind: hostileName}, After: []string{"fetch"}},
		{Name: "large", Job: lite.NewJob{Kind: "resize"}, After: []string{"fetch"}},
		{Job: lite.NewJob{Kind: "publish"}, After: []string{"small", "large"}},
	}, Batch: &lite.Callback{Kind: hostileName, Payload: []byte(hostile)}})
	if err != nil {
		t.Fatal(err)
	}
	end(t, q, lite.DefaultQueue, nil)
	ctx, dialogs := browser(t)
	srv := httptest.NewServer(web.Handler(q, web.Options{Now: clock.Now}))
	t.Cleanup(srv.Close)

	t.Run("a graph is laid out in rows by the page's own stylesheet", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/jobs/%d/graph", srv.URL, wf.IDs[3])), chromedp.WaitVisible(`ol.layer`)))
		nodes, err := chromedp.Run(ctx, chromedp.Nodes(`li.node`))
		is.NoErr(err)
		is.Equal(len(nodes), 4)
		layers, err := chromedp.Run(ctx, chromedp.Nodes(`ol.layer`))
		is.NoErr(err)
		is.Equal(len(layers), 3)
		display, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('ol.layer')).display`))
		is.NoErr(err)
		is.Equal(display, "flex") // app.css applies under the CSP
		screenshot(t, ctx, "graph.png")
	})

	t.Run("a batch shows its counts and its jobs, hostile text as text", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/batches/%d", srv.URL, wf.Batch)), chromedp.WaitVisible(`dd.counts`)))
		counts, err := chromedp.Run(ctx, chromedp.Text(`dd.counts`))
		is.NoErr(err)
		is.Equal(counts, "4: 1 done, 0 dead, 0 cancelled, 3 pending")
		rows, err := chromedp.Run(ctx, chromedp.Nodes(`table.jobs tbody tr`))
		is.NoErr(err)
		is.Equal(len(rows), 4)
		images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.images.length`))
		is.NoErr(err)
		is.Equal(images, 0) // no <img> was made of a kind or a payload
		screenshot(t, ctx, "batch.png")
		is.Equal(dialogs.Load(), int64(0))
	})
}
