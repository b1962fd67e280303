package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

func TestBulkActions(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		ids := seed(t, q, clock)
		h := handler(q, clock, web.Options{})

		t.Run("the API counts with dry_run and acts without it", func(t *testing.T) {
			is := is.New(t)
			var got struct {
				Action string `json:"action"`
				Count  int64  `json:"count"`
				DryRun bool   `json:"dry_run"`
			}
			w := post(h, "/api/bulk/cancel", url.Values{"queue": {"emails"}, "dry_run": {"1"}})
			is.Equal(w.Code, http.StatusOK)
			decode(t, w.Body.Bytes(), &got)
			is.Equal(got.Count, int64(2)) // the running and the available job
			is.True(got.DryRun)
			is.Equal(state(t, q, ids.available), lite.StateAvailable) // a dry run changes nothing
			w = post(h, "/api/bulk/retry", url.Values{"state": {"dead"}})
			is.Equal(w.Code, http.StatusOK)
			decode(t, w.Body.Bytes(), &got)
			is.Equal(got.Count, int64(1))
			is.Equal(state(t, q, ids.dead), lite.StateAvailable)
		})

		t.Run("the API refuses a GET, no filter, and a running job to delete", func(t *testing.T) {
			is := is.New(t)
			is.Equal(get(h, "/api/bulk/cancel?all=1").Code, http.StatusMethodNotAllowed)
			w := post(h, "/api/bulk/cancel", nil)
			is.Equal(w.Code, http.StatusBadRequest)
			is.True(strings.Contains(apiError(t, w.Body.Bytes()), "all=1"))
			is.Equal(post(h, "/api/bulk/delete", url.Values{"state": {"running"}}).Code, http.StatusConflict)
			is.Equal(post(h, "/api/bulk/explode", url.Values{"all": {"1"}}).Code, http.StatusBadRequest)
			is.Equal(state(t, q, ids.running), lite.StateRunning)
		})

		t.Run("the API refuses a filter field given empty, as the CLI does", func(t *testing.T) {
			is := is.New(t)
			for _, field := range []string{"state", "queue", "kind", "tag"} {
				w := post(h, "/api/bulk/cancel", url.Values{field: {""}, "all": {"1"}})
				is.Equal(w.Code, http.StatusBadRequest)
				is.Equal(apiError(t, w.Body.Bytes()), field+" is empty: give a value, or leave the field out not to filter on it")
			}
			is.Equal(state(t, q, ids.available), lite.StateAvailable) // nothing cancelled
		})

		t.Run("the page asks with the count, and only the posted form acts", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/jobs/bulk?do=cancel&id="+strconv.FormatInt(ids.running, 10)+"&id="+strconv.FormatInt(ids.available, 10))
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "Cancel 2 jobs?"))
			is.Equal(state(t, q, ids.running), lite.StateRunning) // the confirmation changes nothing
			w = post(h, "/jobs/bulk", url.Values{"action": {"cancel"}, "id": {strconv.FormatInt(ids.running, 10)}})
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "1 jobs changed"))
			is.Equal(state(t, q, ids.running), lite.StateCancelled)
			is.Equal(state(t, q, ids.available), lite.StateAvailable)
		})

		t.Run("all matching ignores the ticked rows and counts the filter", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/jobs/bulk?do=delete-all&queue=emails&id="+strconv.FormatInt(ids.available, 10))
			is.Equal(w.Code, http.StatusOK)
			is.True(strings.Contains(w.Body.String(), "Delete 3 jobs?")) // every job but none running
		})

		t.Run("a tag filter narrows the API's and the page's bulk actions, all matching included", func(t *testing.T) {
			is := is.New(t)
			vip := enqueue(t, q, lite.NewJob{Queue: "tagged", Kind: "k", Tags: []string{"eu", "vip"}})
			eu := enqueue(t, q, lite.NewJob{Queue: "tagged", Kind: "k", Tags: []string{"eu"}})
			var got struct {
				Count int64 `json:"count"`
			}
			decode(t, post(h, "/api/bulk/cancel", url.Values{"tag": {"eu"}, "dry_run": {"1"}}).Body.Bytes(), &got)
			is.Equal(got.Count, int64(2))
			decode(t, post(h, "/api/bulk/cancel", url.Values{"tag": {"eu,vip"}, "dry_run": {"1"}}).Body.Bytes(), &got)
			is.Equal(got.Count, int64(1)) // every tag given
			page := get(h, "/jobs?tag=vip").Body.String()
			is.True(strings.Contains(page, `value="cancel-all"`)) // all matching is offered under a tag filter
			is.True(strings.Contains(page, `<input type="hidden" name="tag" value="vip">`))
			w := get(h, "/jobs/bulk?do=cancel-all&tag=vip")
			is.True(strings.Contains(w.Body.String(), "Cancel 1 jobs?"))
			is.True(strings.Contains(w.Body.String(), "tagged vip"))
			is.True(strings.Contains(w.Body.String(), `<input type="hidden" name="tag" value="vip">`)) // the confirmation acts on the same filter
			w = post(h, "/jobs/bulk", url.Values{"action": {"cancel"}, "all": {"1"}, "tag": {"vip"}})
			is.True(strings.Contains(w.Body.String(), "1 jobs changed"))
			is.Equal(state(t, q, vip), lite.StateCancelled)
			is.Equal(state(t, q, eu), lite.StateAvailable)
			is.Equal(post(h, "/api/bulk/cancel", url.Values{"tag": {"a\x1b"}}).Code, http.StatusBadRequest)
		})

		t.Run("read-only offers and takes no bulk action", func(t *testing.T) {
			is := is.New(t)
			ro := handler(q, clock, web.Options{ReadOnly: true})
			is.True(!strings.Contains(get(ro, "/jobs").Body.String(), "retry-all"))
			is.Equal(post(ro, "/api/bulk/retry", url.Values{"all": {"1"}}).Code, http.StatusForbidden)
			is.Equal(post(ro, "/jobs/bulk", url.Values{"action": {"retry"}, "all": {"1"}}).Code, http.StatusForbidden)
			is.Equal(get(ro, "/jobs/bulk?do=retry-all").Code, http.StatusForbidden)
		})

		t.Run("a cross-origin post is refused", func(t *testing.T) {
			is := is.New(t)
			w := do(h, request{method: http.MethodPost, target: "/jobs/bulk", form: url.Values{"action": {"delete"}, "all": {"1"}},
				header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}})
			is.Equal(w.Code, http.StatusForbidden)
			is.True(strings.Contains(get(h, "/jobs").Body.String(), `value="delete-all"`)) // still there to see
		})
	})
}
