package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	"github.com/liteq/lite/lite/web"
	"github.com/matryer/is"
)

// hostileTag is as hostile a tag as a tag can be: printable, and short.
const hostileTag = `<script>alert(1)</script><img src=x>"'`

func TestTags(t *testing.T) {
	forEachEngine(t, func(t *testing.T, q *lite.Queue, clock *litetest.Clock) {
		tagged := enqueue(t, q, lite.NewJob{Tags: []string{hostileTag, "signup"}, Meta: map[string]string{hostile: hostile}})
		enqueue(t, q, lite.NewJob{Tags: []string{"signup"}})
		enqueue(t, q, lite.NewJob{})
		h := handler(q, clock, web.Options{})
		var page struct{ Jobs []*lite.Job }

		t.Run("the API lists the jobs carrying every tag asked for", func(t *testing.T) {
			is := is.New(t)
			decode(t, get(h, "/api/jobs?tag=signup").Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 2)
			decode(t, get(h, "/api/jobs?tag=signup&tag="+url.QueryEscape(hostileTag)).Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 1)
			is.Equal(page.Jobs[0].ID, tagged)
			is.Equal(page.Jobs[0].Tags, []string{hostileTag, "signup"}) // sorted, as stored
			is.Equal(page.Jobs[0].Meta, map[string]string{hostile: hostile})
			decode(t, get(h, "/api/jobs?tag=signup,nope").Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 0)
			decode(t, get(h, "/api/jobs?tag=").Body.Bytes(), &page)
			is.Equal(len(page.Jobs), 3) // a blank field filters nothing
		})

		t.Run("a tag no job can carry is 400", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/api/jobs?tag="+url.QueryEscape("a\x1b[2J"))
			is.Equal(w.Code, http.StatusBadRequest)
			is.True(!strings.Contains(w.Body.String(), "\x1b"))
		})

		t.Run("the list filters by tag and shows tags as text", func(t *testing.T) {
			is := is.New(t)
			w := get(h, "/jobs?tag="+url.QueryEscape(hostileTag))
			is.Equal(w.Code, http.StatusOK)
			body := w.Body.String()
			shown := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x&gt;&#34;&#39;"
			is.True(strings.Contains(body, `<span class="tag">`+shown+`</span>`))
			is.True(strings.Contains(body, `name="tag" value="`+shown+`"`)) // the filter, kept in its field
			is.True(!strings.Contains(body, "<script>alert"))
			is.True(!strings.Contains(body, "<img"))
			is.Equal(strings.Count(body, `<td><a href="./jobs/`), 1) // the tagged job alone
		})

		t.Run("the job's page shows its tags and metadata as text", func(t *testing.T) {
			is := is.New(t)
			body := get(h, fmt.Sprintf("/jobs/%d", tagged)).Body.String()
			is.True(strings.Contains(body, `<span class="tag">signup</span>`))
			is.True(strings.Contains(body, "<h2>Metadata</h2>"))
			is.True(!strings.Contains(body, "<script>alert"))
			is.True(!strings.Contains(body, "\x1b"))
			is.True(!strings.Contains(body, "\u202e"))
			is.Equal(strings.Count(body, `\x1b[2J\u202e`), 2) // the key and the value, escaped
		})
	})
}
