package server

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/mcpsag/router/"

// TestServerDependsOnTheContractOnly walks this package's imports within the
// module, transitively, and requires that the gRPC front reaches none of the
// router's internals: it translates to and from skill.Router and nothing else.
func TestServerDependsOnTheContractOnly(t *testing.T) {
	allowed := map[string]bool{
		"internal/server": true, "internal/skill": true, "internal/skillpb": true, "internal/auth": true, "internal/filestamp": true,
		"api/proto/mcpsag/router/v1": true,
	}
	root := filepath.Join("..", "..")
	seen := map[string]bool{}
	queue := []string{"internal/server"}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if seen[pkg] {
			continue
		}
		seen[pkg] = true
		if !allowed[pkg] {
			t.Errorf("internal/server reaches %s; the gRPC front may depend only on the domain, the generated API and auth", pkg)
			continue
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
				p := strings.Trim(imp.Path.Value, `"`)
				if strings.HasPrefix(p, module) {
					queue = append(queue, strings.TrimPrefix(p, module))
				}
			}
		}
	}
	if !seen["internal/skill"] {
		t.Error("the walk never reached internal/skill; it reads the wrong folder")
	}
}
