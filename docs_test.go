package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// runMarker, on the line before a fenced sh block of README.md or a guide
// in docs/, marks the block as runnable here: TestDocsRunAsWritten runs it.
const runMarker = "<!-- run -->"

// pages are the README and every guide.
func pages(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob(filepath.Join("docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, guides...)
}

// runnableBlocks are the sh blocks a runMarker line marks in page.
func runnableBlocks(t *testing.T, page string) []string {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	rest := string(text)
	for {
		_, after, ok := strings.Cut(rest, runMarker+"\n")
		if !ok {
			return blocks
		}
		body, ok := strings.CutPrefix(after, "```sh\n")
		if !ok {
			t.Fatalf("%s: %s is not followed by a ```sh block", page, runMarker)
		}
		block, tail, ok := strings.Cut(body, "```")
		if !ok {
			t.Fatalf("%s: a runnable block is not closed", page)
		}
		blocks = append(blocks, block)
		rest = tail
	}
}

// runShell runs script with bash in a fresh directory, the built lite
// first on PATH and no LITE_DB of the caller's, and returns its output.
func runShell(t *testing.T, script string) (string, error) {
	t.Helper()
	sh := exec.CommandContext(t.Context(), "bash", "-euo", "pipefail", "-c", script)
	sh.Dir = t.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LITE_DB=") {
			sh.Env = append(sh.Env, kv)
		}
	}
	sh.Env = append(sh.Env, "PATH="+filepath.Dir(liteBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := sh.CombinedOutput()
	return string(out), err
}

func TestDocsRunAsWritten(t *testing.T) {
	t.Parallel()
	ran := 0
	for _, page := range pages(t) {
		for i, block := range runnableBlocks(t, page) {
			ran++
			t.Run(fmt.Sprintf("%s block %d runs", page, i+1), func(t *testing.T) {
				out, err := runShell(t, block)
				if err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			})
		}
	}
	is.New(t).True(ran > 0) // a marker renamed on every page would run nothing
}

var (
	fencedBlock = regexp.MustCompile("(?s)```.*?```")
	inlineCode  = regexp.MustCompile("`[^`\n]*`")
	mdLink      = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading   = regexp.MustCompile(`(?m)^#+ (.+)$`)
	notInSlug   = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
)

// prose is page's text without its code, where a link is only text.
func prose(t *testing.T, page string) string {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	return inlineCode.ReplaceAllString(fencedBlock.ReplaceAllString(string(text), ""), "")
}

// anchors are the ids GitHub gives page's headings: lower case,
// punctuation dropped, spaces as hyphens.
func anchors(t *testing.T, page string) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(fencedBlock.ReplaceAllString(string(text), ""), -1) {
		id := notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
		ids[strings.ReplaceAll(id, " ", "-")] = true
	}
	return ids
}

func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	linked := map[string]bool{}
	for _, page := range pages(t) {
		for _, m := range mdLink.FindAllStringSubmatch(prose(t, page), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s: %v", page, link, err)
				continue
			}
			linked[filepath.Clean(target)] = true
			if anchor != "" && !anchors(t, target)[anchor] {
				t.Errorf("%s links to %s: %s has no heading %q", page, link, target, anchor)
			}
		}
	}
	// A guide or image no page links to is one a reader never finds.
	files, err := os.ReadDir("docs")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if path := filepath.Join("docs", f.Name()); !linked[path] {
			t.Errorf("%s is linked from nowhere", path)
		}
	}
}

// The README's set-up commands are the ones the tests stand behind: the
// demo, which TestDemoKillsAndFreezesWorkersAndEveryJobIsDoneOnce runs,
// and the suite, which .ci/run runs as written.
func TestREADMESetUpIsWhatTheTestsRun(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	readme, err := os.ReadFile("README.md")
	is.NoErr(err)
	_, after, ok := strings.Cut(string(readme), "## Set-up\n")
	is.True(ok) // the README has a Set-up section
	_, after, ok = strings.Cut(after, "```sh\n")
	is.True(ok)
	block, _, _ := strings.Cut(after, "```")
	var commands []string
	for line := range strings.Lines(block) {
		command, _, _ := strings.Cut(line, "#")
		commands = append(commands, strings.TrimSpace(command))
	}
	is.Equal(commands, []string{"go run . demo", "go test -race ./..."})
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	is.NoErr(err)
	is.True(strings.Contains(string(ci), "\nGOFLAGS='-count=1 -timeout=30m' go test -race ./...\n")) // CI runs the README's suite
}
