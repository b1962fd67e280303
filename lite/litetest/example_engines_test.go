package litetest_test

import (
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/liteq/lite/lite/litetest"
	_ "github.com/liteq/lite/lite/pg" // so that ForEachEngine can run on PostgreSQL
)

// A test that runs on every engine the test binary has: SQLite, and
// PostgreSQL when LITE_TEST_POSTGRES names a server, e.g.
//
//	LITE_TEST_POSTGRES=postgres://localhost/test go test ./...
//
// The application's own SQL in such a test must run on both: number the
// parameters ($1, $2), which SQLite takes too.
func ExampleForEachEngine() {
	_ = func(t *testing.T) { // in your code: func TestSignup(t *testing.T) {
		litetest.ForEachEngine(t, func(t *testing.T, e litetest.Engine) {
			q, _ := e.Open(t)
			if _, err := lite.EnqueueArgs(t.Context(), q, Welcome{UserID: 1}); err != nil {
				t.Fatal(err)
			}
			litetest.RequireEnqueued(t, q, Welcome{UserID: 1})
		})
	}
}
