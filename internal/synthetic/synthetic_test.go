package synthetic

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpsag/router/internal/generation"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
)

func TestCatalogIsDistinctDeterministicAndParses(t *testing.T) {
	src := &Source{Skills: []Skill{
		{"pdf-forms", "Fill PDF forms: with a colon, and \"quotes\".", "# PDF\n"},
		{"sql-review", "Review SQL queries for slow joins.", "# SQL\n"},
		{"csv-clean", "Clean CSV files.", "# CSV\n"},
	}}
	a, b := src.Catalog(10, 1), src.Catalog(10, 1)
	names := map[string]bool{}
	for i, s := range a {
		if s != b[i] {
			t.Fatalf("skill %d differs between two runs: %+v vs %+v", i, s, b[i])
		}
		if names[s.Name] {
			t.Fatalf("name %s twice", s.Name)
		}
		names[s.Name] = true
	}
	if a[3].Name != "pdf-forms-v1" || len(a[3].Description) <= len(src.Skills[0].Description) {
		t.Errorf("first copy %+v", a[3])
	}
	ws := t.TempDir()
	if err := WriteWorkspace(ws, a); err != nil {
		t.Fatal(err)
	}
	roots, err := skillfs.RootsForPath(ws)
	if err != nil {
		t.Fatal(err)
	}
	rep := generation.Validate(roots, skillmd.DefaultLimits, skillfs.DefaultScanLimits)
	if rep.Files != 10 || rep.Served != 10 {
		t.Errorf("written workspace: %d files, %d served; problems %v", rep.Files, rep.Served, rep.Problems)
	}
}

func TestLoadDevSets(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "eval")
	if v := os.Getenv("MCPSAG_EVAL_DIR"); v != "" {
		dir = v
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the dev sets are not at %s (set MCPSAG_EVAL_DIR): %v", dir, err)
	}
	src, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Skills) < 4000 || len(src.Queries) < 1000 {
		t.Errorf("%d skills, %d queries from %s", len(src.Skills), len(src.Queries), dir)
	}
}
