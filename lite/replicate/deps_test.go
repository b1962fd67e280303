package replicate_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestOnlyAProgramThatReplicatesLinksLitestream(t *testing.T) {
	for pkg, links := range map[string]bool{"github.com/liteq/lite/lite": false, "github.com/liteq/lite/lite/replicate": true} {
		t.Run(pkg+" links Litestream only if it is lite/replicate", func(t *testing.T) {
			is := is.New(t)
			out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", pkg).Output()
			is.NoErr(err)
			is.Equal(strings.Contains(string(out), "github.com/benbjohnson/litestream\n"), links)
		})
	}
}
