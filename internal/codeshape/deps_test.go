package codeshape

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/mcpsag/router/"

// moduleDeps returns the packages of the module that pkg (a folder relative
// to the module's root) reaches through the imports of its non-test files,
// transitively, pkg included.
func moduleDeps(t *testing.T, pkg string) map[string]bool {
	t.Helper()
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		files, err := filepath.Glob(filepath.Join(root, p, "*.go"))
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
				if dep, ok := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module); ok {
					queue = append(queue, dep)
				}
			}
		}
	}
	if !seen["internal/skill"] {
		t.Fatalf("the walk from %s never reached internal/skill; it reads the wrong folder", pkg)
	}
	return seen
}

// TestServerDependsOnTheContractOnly requires that the gRPC front reaches
// none of the router's internals: it translates to and from skill.Router
// and nothing else.
func TestServerDependsOnTheContractOnly(t *testing.T) {
	allowed := []string{"internal/server", "internal/skill", "internal/skillpb", "internal/auth", "internal/filestamp", "api/proto/mcpsag/router/v1"}
	for pkg := range moduleDeps(t, "internal/server") {
		if !slices.Contains(allowed, pkg) {
			t.Errorf("internal/server reaches %s; the gRPC front may depend only on the domain, the generated API and auth", pkg)
		}
	}
}

// TestRouterDependsOnNoProducer requires that the router reaches neither
// the loader nor what makes a generation (the store, the embedding models,
// the graphs they are read from, the mapped files): it serves the
// generations it is given through router.Generation, its own view of one.
func TestRouterDependsOnNoProducer(t *testing.T) {
	forbidden := []string{"internal/loader", "internal/store", "internal/embed", "internal/onnxgraph", "internal/mapfile"}
	for pkg := range moduleDeps(t, "internal/router") {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("internal/router reaches %s; the router may depend only on the domain and on the view of a generation it declares", pkg)
			}
		}
	}
}
