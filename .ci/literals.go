// literals ORIGINAL MUTATED prints, as JSON [[old, new], ...], the string
// literals a mutant changed (of a migration, its whole text: see
// migration), when it changed nothing else and each old
// value is written once among the string literals of the package's
// source (MUTATED's directory, its other non-test files and ORIGINAL):
// a program that rewrites old to new in every statement it sends then
// behaves as the mutant does (lite/mutated_statements_test.go). Otherwise
// it says why on standard error and exits 1, and .ci/mutation compiles
// the mutant.
package main

import (
	"encoding/json"
	"fmt"
	"go/scanner"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: literals ORIGINAL MUTATED")
		os.Exit(2)
	}
	original, mutated := read(os.Args[1]), read(os.Args[2])
	if strings.HasSuffix(os.Args[2], ".sql") {
		migration(original, mutated)
		return
	}
	before, after := tokens(original), tokens(mutated)
	if len(before) != len(after) {
		refuse("the mutant changes more than string literals")
	}
	var pairs [][2]string
	for i := range before {
		b, a := before[i], after[i]
		if b == a {
			continue
		}
		if b.tok != token.STRING || a.tok != token.STRING {
			refuse("the mutant changes more than string literals")
		}
		pairs = append(pairs, [2]string{unquote(b.lit), unquote(a.lit)})
	}
	if len(pairs) == 0 {
		refuse("the mutant changes nothing")
	}

	// Every string literal of the package, the mutated file's as they were.
	var values []string
	for _, t := range before {
		if t.tok == token.STRING {
			values = append(values, unquote(t.lit))
		}
	}
	dir, self := filepath.Split(os.Args[2])
	others, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range others {
		if filepath.Base(f) == self || strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, t := range tokens(read(f)) {
			if t.tok == token.STRING {
				values = append(values, unquote(t.lit))
			}
		}
	}
	for _, p := range pairs {
		n := 0
		for _, v := range values {
			n += strings.Count(v, p[0])
		}
		if n != 1 {
			refuse(fmt.Sprintf("%q is written %d times in the package", p[0], n))
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(pairs); err != nil {
		refuse(err.Error())
	}
}

// migration prints the pair of a mutated migration: the whole text of
// the file, which lite sends as one statement when it migrates (and when
// it builds the reference schema that Open checks a file against), as
// it was and as it is. It refuses when the other engine's migration of
// the same name has the same text, which the rewrite would change too.
func migration(original, mutated []byte) {
	if string(original) == string(mutated) {
		refuse("the mutant changes nothing")
	}
	dir, name := filepath.Split(filepath.Clean(os.Args[2]))
	engines := filepath.Dir(filepath.Clean(dir))
	for _, other := range []string{"sqlite", "postgres"} {
		if other == filepath.Base(filepath.Clean(dir)) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(engines, other, name)); err == nil && string(b) == string(original) {
			refuse("the " + other + " migration of the same name has the same text")
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode([][2]string{{string(original), string(mutated)}}); err != nil {
		refuse(err.Error())
	}
}

type tok struct {
	tok token.Token
	lit string
}

// tokens is src's tokens, comments left out.
func tokens(src []byte) []tok {
	var s scanner.Scanner
	fs := token.NewFileSet()
	s.Init(fs.AddFile("", fs.Base(), len(src)), src, func(pos token.Position, msg string) { refuse(msg) }, 0)
	var out []tok
	for {
		_, t, lit := s.Scan()
		if t == token.EOF {
			return out
		}
		out = append(out, tok{t, lit})
	}
}

func unquote(lit string) string {
	v, err := strconv.Unquote(lit)
	if err != nil {
		refuse(err.Error())
	}
	return v
}

func read(path string) []byte {
	b, err := os.ReadFile(path)
	if err != nil {
		refuse(err.Error())
	}
	return b
}

func refuse(why string) {
	fmt.Fprintln(os.Stderr, "literals:", why)
	os.Exit(1)
}
