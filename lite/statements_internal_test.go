package lite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestEveryStatementIsListed(t *testing.T) {
	is := is.New(t)
	declared, inline := declaredStatements(t)
	var missing, gone []string
	for _, name := range declared {
		if _, ok := statements[name]; !ok {
			missing = append(missing, name)
		}
	}
	for name := range statements {
		if !slices.Contains(declared, name) {
			gone = append(gone, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("add to statements in statements_test.go: %s", strings.Join(missing, ", "))
	}
	if len(gone) > 0 {
		t.Errorf("no longer declared, remove from statements in statements_test.go: %s", strings.Join(gone, ", "))
	}
	// why: a statement written inside a function body escapes the list;
	// only a function that builds statements from parts may make one, and
	// its results are listed where a variable holds them
	is.Equal(inline, []string(nil))
}

// declaredStatements reads lite's source: the package variables that hold
// statements (of type stmt, arrays of them, or the result of a function
// that returns one), and the places outside such functions where a
// stmt{...} is written inline.
func declaredStatements(t *testing.T) (vars, inline []string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, file)
	}
	builders := map[string]bool{}
	for _, file := range parsed {
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Type.Results != nil && mentions(fn.Type.Results, nil) {
				builders[fn.Name.Name] = true
			}
		}
	}
	for _, file := range parsed {
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, sp := range d.Specs {
					vs := sp.(*ast.ValueSpec)
					if mentions(vs, builders) {
						for _, n := range vs.Names {
							vars = append(vars, n.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if builders[d.Name.Name] || d.Body == nil {
					continue
				}
				ast.Inspect(d.Body, func(n ast.Node) bool {
					if c, ok := n.(*ast.CompositeLit); ok {
						if id, ok := c.Type.(*ast.Ident); ok && id.Name == "stmt" {
							inline = append(inline, fset.Position(c.Pos()).String())
						}
					}
					return true
				})
			}
		}
	}
	return vars, inline
}

// mentions reports whether n names the type stmt or calls one of builders.
func mentions(n ast.Node, builders map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			found = found || n.Name == "stmt"
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && builders[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

func TestAnUnknownEngineGetsNoSQLiteSQL(t *testing.T) {
	unknown := enginePostgres + 1
	for name, use := range map[string]func(){
		"its name":               func() { _ = unknown.String() },
		"a statement's text":     func() { _ = (&Queue{engine: unknown}).sql(ackDoneSQL) },
		"whether it is a server": func() { _ = unknown.onServer() },
		"its migrations":         func() { _, _ = loadMigrations(unknown) },
	} {
		t.Run("asking for "+name+" panics", func(t *testing.T) {
			is := is.New(t)
			defer func() {
				is.Equal(recover(), "lite: unknown engine 2") // why: not SQLite's answer
			}()
			use()
		})
	}
}

// A purge's batch size follows each statement's time, not the machine's
// speed in a test: it is driven here with the times a statement took.
func TestAPurgesBatchesAreSizedByTime(t *testing.T) {
	is := is.New(t)
	p := purgePlan()
	is.Equal(p.size, cleanBatch)
	p.next(purgeTarget / 4)
	is.Equal(p.size, 2*cleanBatch) // a quick statement: twice as many next
	p.next(purgeTarget * 3 / 4)
	is.Equal(p.size, 2*cleanBatch) // within the target: kept
	p.next(2 * purgeTarget)
	is.Equal(p.size, cleanBatch) // a slow statement: half as many, never under cleanBatch
	p.next(2 * purgeTarget)
	is.Equal(p.size, cleanBatch)
	for range 20 {
		p.next(0)
	}
	is.Equal(p.size, purgeBatchMax) // capped
	c := cleanPlan()
	c.next(0)
	is.Equal(c.size, cleanBatch) // the background cleaner keeps its fixed batches
}
