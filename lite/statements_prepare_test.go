package lite_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/liteq/lite/lite"
	"github.com/matryer/is"
)

var update = flag.Bool("update", false, "rewrite testdata/lease.golden")

func TestEveryStatement(t *testing.T) {
	all := lite.Statements()

	t.Run("has both halves, taking the same parameters, or is marked one engine's", func(t *testing.T) {
		for _, s := range all {
			if s.Only != "" {
				own, rest := s.SQLite, s.Postgres
				if s.Only == "postgres" {
					own, rest = rest, own
				}
				if strings.TrimSpace(own) == "" || rest != "" {
					t.Errorf("%s, marked %s's only, has %q on SQLite and %q on PostgreSQL", s.Name, s.Only, s.SQLite, s.Postgres)
				}
				continue
			}
			if strings.TrimSpace(s.SQLite) == "" || strings.TrimSpace(s.Postgres) == "" {
				t.Errorf("%s lacks a half: %q on SQLite, %q on PostgreSQL", s.Name, s.SQLite, s.Postgres)
				continue
			}
			sqlite, pg := sqliteParams(s.SQLite), postgresParams(s.Postgres)
			if !slices.Equal(sqlite, pg) {
				t.Errorf("%s takes parameters %v on SQLite and %v on PostgreSQL", s.Name, sqlite, pg)
			}
			if !s.Fragment && len(pg) > 0 && len(pg) != pg[len(pg)-1] {
				// PostgreSQL cannot type a parameter the text leaves out.
				t.Errorf("%s leaves out one of its parameters: %v", s.Name, pg)
			}
		}
	})

	forEachEngine(t, func(t *testing.T, e testEngine) {
		t.Run("prepares on a freshly migrated database", func(t *testing.T) {
			q, _ := e.open(t, lite.Options{})
			for _, s := range all {
				if s.Fragment || s.Only != "" && s.Only != e.name {
					continue
				}
				text := s.SQLite
				if e.name == "postgres" {
					text = s.Postgres
				}
				p, err := q.DB().PrepareContext(t.Context(), text)
				if err != nil {
					t.Errorf("%s does not prepare: %v", s.Name, err)
					continue
				}
				p.Close()
			}
		})
	})
}

// A write that runs several statements in one transaction prepares only
// the one it names before it starts (preparing takes the writer's one
// connection); its other statements must not be compiled again on every
// call: on lite_jobs that compiles every trigger of the table, and a
// workflow's enqueue spent four fifths of its time doing so.
func TestAStatementATransactionRanUnpreparedIsPreparedOnceItEnds(t *testing.T) {
	forEachEngine(t, func(t *testing.T, e testEngine) {
		is := is.New(t)
		q, _ := e.open(t, lite.Options{})
		is.True(!lite.IsPrepared(q, "setFollowsSQL"))
		_, err := q.EnqueueWorkflow(t.Context(), lite.Workflow{Steps: []lite.Step{
			{Name: "a", Job: lite.NewJob{Payload: []byte("{}")}},
			{Name: "b", Job: lite.NewJob{Payload: []byte("{}")}, After: []string{"a"}},
		}})
		is.NoErr(err)
		is.True(lite.IsPrepared(q, "setFollowsSQL"))
		is.True(lite.IsPrepared(q, "insertDepsSQL"))
	})
}

// TestLeaseTexts compares the lease statements, which lease.go builds from
// parts, with testdata/lease.golden, so that a change to any of them is
// seen whole in review. go test -run TestLeaseTexts -update rewrites it.
func TestLeaseTexts(t *testing.T) {
	var b strings.Builder
	b.WriteString("-- lease.go's leaseSQLs[queues][byKind][unlimited]: queues 0 any, 1 one, 2 some;\n-- byKind 1: a kind filter; unlimited 1: takes nothing from a limited queue.\n-- Then settle.go's ackAndLeaseSQLs[queues][byKind], PostgreSQL's alone.\n\n")
	for _, s := range lite.Statements() {
		switch {
		case strings.HasPrefix(s.Name, "leaseSQLs["):
			fmt.Fprintf(&b, "-- %s, sqlite\n%s;\n\n-- %s, postgres\n%s;\n\n", s.Name, s.SQLite, s.Name, s.Postgres)
		case strings.HasPrefix(s.Name, "ackAndLeaseSQLs["):
			fmt.Fprintf(&b, "-- %s, postgres\n%s;\n\n", s.Name, s.Postgres)
		}
	}
	golden := filepath.Join("testdata", "lease.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("the lease texts differ from %s: review the change, then rewrite it with go test -run TestLeaseTexts -update ./lite/", golden)
	}
}

// sqliteParams are the numbers of the parameters a SQLite text takes, in
// order, each once: ?N is N, and a bare ? is one more than the largest
// number before it. Quoted text is skipped.
func sqliteParams(text string) []int {
	var nums []int
	largest := 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\'':
			i = skipQuoted(text, i)
		case '?':
			n, end := number(text, i+1)
			if end == i+1 {
				n = largest + 1
			}
			largest = max(largest, n)
			nums = append(nums, n)
			i = end - 1
		}
	}
	return distinct(nums)
}

// postgresParams are the numbers of the $N parameters a PostgreSQL text
// takes, in order, each once. Quoted text is skipped.
func postgresParams(text string) []int {
	var nums []int
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\'':
			i = skipQuoted(text, i)
		case '$':
			if n, end := number(text, i+1); end > i+1 {
				nums = append(nums, n)
				i = end - 1
			}
		}
	}
	return distinct(nums)
}

// skipQuoted is the index of the quote that ends the string starting at
// text[i]; a doubled quote is one quote inside it.
func skipQuoted(text string, i int) int {
	for i++; i < len(text); i++ {
		if text[i] == '\'' {
			if i+1 < len(text) && text[i+1] == '\'' {
				i++
				continue
			}
			return i
		}
	}
	return i
}

// number reads the decimal number at text[i:] and returns it with the
// index after it (i itself if there is none).
func number(text string, i int) (int, int) {
	end := i
	for end < len(text) && text[end] >= '0' && text[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(text[i:end])
	return n, end
}

// distinct is nums sorted, each once.
func distinct(nums []int) []int {
	slices.Sort(nums)
	return slices.Compact(nums)
}
