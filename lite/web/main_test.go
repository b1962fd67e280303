package web_test

import (
	"os"
	"testing"

	"github.com/liteq/lite/lite/litetest"
)

// TestMain says in one line when the PostgreSQL engine's tests are skipped.
func TestMain(m *testing.M) { os.Exit(litetest.Main(m)) }
