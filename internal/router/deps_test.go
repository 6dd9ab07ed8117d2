package router

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRouterDependsOnNoProducer walks this package's imports within the
// module, transitively, and requires that the router reaches neither the
// loader nor what makes a generation (the store, the embedding models, the
// graphs they are read from, the mapped files): it serves the generations
// it is given through Generation, its own view of one.
func TestRouterDependsOnNoProducer(t *testing.T) {
	const module = "github.com/mcpsag/router/"
	forbidden := []string{"internal/loader", "internal/store", "internal/embed", "internal/onnxgraph", "internal/mapfile"}
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	queue := []string{"internal/router"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("internal/router reaches %s; the router may depend only on the domain and on the view of a generation it declares", pkg)
			}
		}
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				if p := strings.Trim(imp.Path.Value, `"`); strings.HasPrefix(p, module) {
					queue = append(queue, strings.TrimPrefix(p, module))
				}
			}
		}
	}
	if !seen["internal/skill"] {
		t.Error("the walk never reached internal/skill; it reads the wrong folder")
	}
}
