package codeshape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// maxFuncLines is the most lines, from its func line to its closing brace,
// a non-test function may have without saying why it is one function.
const maxFuncLines = 60

// maxLongFuncs is how many non-test functions of the module may be longer
// than maxFuncLines, each with a reason.
const maxLongFuncs = 15

// lengthReason is how a function's doc comment starts the paragraph that
// says why the function is longer than maxFuncLines.
const lengthReason = "Length:"

// longFunc is a non-test function longer than maxFuncLines.
type longFunc struct {
	name   string
	lines  int
	reason bool // its doc comment has a lengthReason paragraph
}

// longFuncs returns the functions of a parsed file longer than
// maxFuncLines.
func longFuncs(fset *token.FileSet, f *ast.File) []longFunc {
	var out []longFunc
	for _, decl := range f.Decls {
		d, ok := decl.(*ast.FuncDecl)
		if !ok || d.Body == nil {
			continue
		}
		n := fset.Position(d.End()).Line - fset.Position(d.Type.Pos()).Line + 1
		if n <= maxFuncLines {
			continue
		}
		out = append(out, longFunc{name: funcName(d), lines: n, reason: hasLengthReason(d.Doc)})
	}
	return out
}

// hasLengthReason reports whether a doc comment has a paragraph that starts
// with lengthReason and says something after it.
func hasLengthReason(doc *ast.CommentGroup) bool {
	if doc == nil {
		return false
	}
	for _, para := range strings.Split(doc.Text(), "\n\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(para), lengthReason); ok && strings.TrimSpace(rest) != "" {
			return true
		}
	}
	return false
}

// TestFunctionLength fails for each non-test function of the module longer
// than maxFuncLines whose doc comment does not say why it is one function,
// and when more than maxLongFuncs are that long.
func TestFunctionLength(t *testing.T) {
	var long []string
	eachSourceFile(t, func(rel string, src []byte) {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			t.Error(err)
			return
		}
		for _, fn := range longFuncs(fset, f) {
			long = append(long, fmt.Sprintf("%s: %s (%d lines)", rel, fn.name, fn.lines))
			if !fn.reason {
				t.Errorf("%s: %s has %d lines, over %d: split it into the steps it is, or start a paragraph of its doc comment with %q and say why it is one function",
					rel, fn.name, fn.lines, maxFuncLines, lengthReason)
			}
		}
	})
	if len(long) > maxLongFuncs {
		t.Errorf("%d functions are over %d lines, at most %d may be:\n\t%s", len(long), maxFuncLines, maxLongFuncs, strings.Join(long, "\n\t"))
	}
}

// TestLongFuncsCountsLinesAndReasons holds the checker to a source whose
// answers are known: a function is counted from its func line to its
// closing brace, and only a "Length:" paragraph with words after it is a
// reason.
func TestLongFuncsCountsLinesAndReasons(t *testing.T) {
	body := func(lines int) string { return strings.Repeat("\t_ = 0\n", lines-2) }
	src := "package p\n\n" +
		"func fits() {\n" + body(maxFuncLines) + "}\n\n" +
		"func over() {\n" + body(maxFuncLines+1) + "}\n\n" +
		"// defended does one thing.\n//\n// Length: one table, read top to bottom.\nfunc defended() {\n" + body(maxFuncLines+1) + "}\n\n" +
		"// Length:\nfunc empty() {\n" + body(maxFuncLines+1) + "}\n"
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]longFunc{}
	for _, fn := range longFuncs(fset, f) {
		got[fn.name] = fn
	}
	want := map[string]longFunc{
		"over":     {name: "over", lines: maxFuncLines + 1},
		"defended": {name: "defended", lines: maxFuncLines + 1, reason: true},
		"empty":    {name: "empty", lines: maxFuncLines + 1},
	}
	if len(got) != len(want) {
		t.Errorf("long functions %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: got %+v, want %+v", name, got[name], w)
		}
	}
}
