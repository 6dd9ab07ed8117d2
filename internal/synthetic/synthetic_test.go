package synthetic

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/loader"
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
	rep := loader.Validate(roots, nil, skillmd.DefaultLimits, skillfs.DefaultScanLimits)
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

func TestCatalogWithBodiesAndLongTasks(t *testing.T) {
	src := &Source{
		Skills:  []Skill{{"pdf-forms", "Fill PDF forms.", "# PDF\n"}, {"sql-review", "Review SQL.", "# SQL\n"}},
		Queries: []string{"fill in my tax form", "why is this query slow"},
	}
	var body []string
	for i := range 400 {
		body = append(body, fmt.Sprintf("Line %d says how to deploy, test and release the service.", i))
	}
	src.Bodies = []string{strings.Join(body, "\n")}
	a, b := src.Catalog(6, 3), src.Catalog(6, 3)
	for i, s := range a {
		if s != b[i] {
			t.Fatalf("skill %d differs between two runs", i)
		}
		if !strings.HasPrefix(s.Body, "# ") || len(s.Body) < 500 || !strings.Contains(s.Body, "deploy") {
			t.Errorf("skill %d body %.80q... (%d bytes) lacks the real stretch", i, s.Body, len(s.Body))
		}
	}
	tasks := src.LongTasks(5, 2000, 1)
	for i, task := range tasks {
		if len(task) < 2000 || len(task) > 2200 || !utf8.ValidString(task) {
			t.Errorf("task %d has %d bytes, want 2000 to 2200 of valid UTF-8", i, len(task))
		}
	}
	path := filepath.Join(t.TempDir(), "q.jsonl")
	if err := WriteQueries(path, "long", tasks); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if n := strings.Count(string(data), "\n"); n != 5 || !strings.Contains(string(data), `"id":"long-4"`) {
		t.Errorf("queries file: %d lines:\n%.300s", n, data)
	}
}
