// testfiles DIR NAME... prints the test files of the package in DIR that
// the tests NAME need: the files declaring them and, in turn, every file
// declaring a name those files use. .ci/mutation compiles a mutant with
// these alone, because compiling the library's whole test package, not
// the mutant, was most of a mutation's time. A name is matched by its
// spelling alone (a function of one test file and a local variable of
// another are one), which keeps more files than needed, never fewer; a file with a TestMain,
// an init or a blank import is always kept, since what it sets up is
// named nowhere. A set that does not compile is the harness's to notice.
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: testfiles DIR TEST...")
		os.Exit(2)
	}
	files, err := filepath.Glob(filepath.Join(os.Args[1], "*_test.go"))
	if err != nil {
		fail(err)
	}
	declaredIn := map[string][]string{} // a top-level name: the files declaring it
	uses := map[string][]string{}       // a file: every identifier it spells
	keep := map[string]bool{}
	for _, f := range files {
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			fail(err)
		}
		for _, name := range declared(parsed) {
			declaredIn[name] = append(declaredIn[name], f)
			if name == "TestMain" || name == "init" {
				keep[f] = true
			}
		}
		for _, imp := range parsed.Imports {
			if imp.Name != nil && imp.Name.Name == "_" {
				keep[f] = true
			}
		}
		uses[f] = spelled(parsed)
	}
	var todo []string
	for f := range keep {
		todo = append(todo, f)
	}
	for _, test := range os.Args[2:] {
		for _, f := range declaredIn[test] {
			if !keep[f] {
				keep[f] = true
				todo = append(todo, f)
			}
		}
	}
	for len(todo) > 0 {
		f := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, name := range uses[f] {
			for _, g := range declaredIn[name] {
				if !keep[g] {
					keep[g] = true
					todo = append(todo, g)
				}
			}
		}
	}
	var out []string
	for f := range keep {
		out = append(out, filepath.Base(f))
	}
	sort.Strings(out)
	for _, f := range out {
		fmt.Println(f)
	}
}

// spelled is every identifier file uses, but the name after a dot of a
// value's field or method: a method is needed through its type (see
// declared), and a field is no top-level name. The name after an
// imported package's name is kept, as the external tests reach the
// internal ones' declarations that way (lite.Something).
func spelled(file *ast.File) []string {
	imported := map[string]bool{}
	for _, imp := range file.Imports {
		name := filepath.Base(strings.Trim(imp.Path.Value, `"`))
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imported[name] = true
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			ast.Inspect(n.X, func(n ast.Node) bool {
				if id, ok := n.(*ast.Ident); ok {
					names = append(names, id.Name)
				}
				return true
			})
			if x, ok := n.X.(*ast.Ident); ok && imported[x.Name] {
				names = append(names, n.Sel.Name)
			}
			return false
		case *ast.Ident:
			names = append(names, n.Name)
		}
		return true
	})
	return names
}

// declared is every name file declares at its top level; a method counts
// as its receiver's type, so the file is kept wherever the type is.
func declared(file *ast.File) []string {
	var names []string
	for _, d := range file.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv != nil && len(d.Recv.List) > 0 {
				names = append(names, receiverType(d.Recv.List[0].Type))
				continue
			}
			names = append(names, d.Name.Name)
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					names = append(names, s.Name.Name)
				case *ast.ValueSpec:
					for _, n := range s.Names {
						names = append(names, n.Name)
					}
				}
			}
		}
	}
	return names
}

// receiverType is the name of a method's receiver type: T of T, *T, T[P].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testfiles:", err)
	os.Exit(1)
}
