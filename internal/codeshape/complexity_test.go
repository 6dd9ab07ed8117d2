package codeshape

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxComplexity is the most branches a non-test function may take.
const maxComplexity = 25

// complexity returns the cyclomatic complexity of a function (a declaration
// or a literal) as gocyclo v0.6.0 counts it: 1, plus one for each if, for,
// range, case clause and select clause other than default, and && or ||.
// Function literals inside count towards the function that holds them.
func complexity(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// funcs returns the complexity of each function of a parsed file by name:
// methods as (Recv).Name, and package-level variables holding a function
// literal by the variable's name.
func funcs(f *ast.File) map[string]int {
	out := map[string]int{}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			out[funcName(d)] = complexity(d)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.FuncLit); ok && i < len(vs.Names) {
						out[vs.Names[i].Name] = complexity(lit)
					}
				}
			}
		}
	}
	return out
}

func funcName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return d.Name.Name
	}
	t := d.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	if idx, ok := t.(*ast.IndexExpr); ok {
		t = idx.X
	}
	if idx, ok := t.(*ast.IndexListExpr); ok {
		t = idx.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return "(" + id.Name + ")." + d.Name.Name
	}
	return d.Name.Name
}

// eachSourceFile calls fn with the path, relative to the module's root,
// and the content of every non-test Go file of the module, skipping
// testdata, vendor and folders starting with . or _ (as gocyclo does). It
// fails when it finds fewer than 100 files.
func eachSourceFile(t *testing.T, fn func(rel string, src []byte)) {
	t.Helper()
	root := filepath.Join("..", "..")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		rel, _ := filepath.Rel(root, path)
		fn(filepath.ToSlash(rel), src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("read %d Go files, want the whole module (over 100)", files)
	}
}

// TestComplexity fails for each non-test function of the module over
// maxComplexity.
func TestComplexity(t *testing.T) {
	eachSourceFile(t, func(rel string, src []byte) {
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Error(err)
			return
		}
		for fn, c := range funcs(f) {
			if c > maxComplexity {
				t.Errorf("%s: %s has cyclomatic complexity %d, over %d: split it into the steps it is", rel, fn, c, maxComplexity)
			}
		}
	})
}

// maxLines is the most lines a non-test Go file under internal/ may have.
const maxLines = 700

// TestFileLength fails for each non-test Go file under internal/ longer
// than maxLines: a file that long holds more than one concern.
func TestFileLength(t *testing.T) {
	eachSourceFile(t, func(rel string, src []byte) {
		if !strings.HasPrefix(rel, "internal/") {
			return
		}
		if n := bytes.Count(src, []byte("\n")); n > maxLines {
			t.Errorf("%s has %d lines, over %d: move a concern to a file of its own", rel, n, maxLines)
		}
	})
}

// TestComplexityCountsAsGocyclo holds complexity to the counts gocyclo
// v0.6.0 gives (`gocyclo -over 0` on this source): each construct that
// branches counts once, default clauses and plain blocks not at all.
func TestComplexityCountsAsGocyclo(t *testing.T) {
	const src = `package p

func straight() int { x := 1; { x++ }; return x }

func branches(a, b bool, xs []int, ch chan int) int {
	n := 0
	if a && b || !a {
		n++
	} else if b {
		n--
	}
	for i := 0; i < 3; i++ {
		for range xs {
		}
	}
	switch n {
	case 1, 2:
	case 3:
	default:
	}
	switch v := any(n).(type) {
	case int:
		_ = v
	default:
	}
	select {
	case <-ch:
	case ch <- 1:
	default:
	}
	f := func() bool { return a || b }
	_ = f
	return n
}

type T struct{}

func (*T) method(a bool) {
	if a {
	}
}

var lit = func(a, b bool) bool { return a && b }
`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := funcs(f)
	// gocyclo v0.6.0 -over 0 on this file:
	// 13 p branches, 2 p lit, 2 p (*T).method, 1 p straight.
	want := map[string]int{"straight": 1, "branches": 13, "(T).method": 2, "lit": 2}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("complexity of %s = %d, want %d", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("functions found %v, want %v", got, want)
	}
}
