package statedir

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The magics are 8 bytes each, and no two formats share one.
func TestMagicsDiffer(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range []string{SnapshotMagic, IndexMagic, ScanMagic, ListingsMagic} {
		if len(m) != 8 || !strings.HasPrefix(m, "MCPSAG") || seen[m] {
			t.Errorf("magic %q: want 8 bytes starting MCPSAG, each its own", m)
		}
		seen[m] = true
	}
}

// The package comment draws the state folder: every file name is in it.
func TestLayoutNamesEveryFile(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "statedir.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, name := range []string{CacheFile, CleanNote, HolderFile, SocketFile, SnapshotFile, ScanFile, ListingsFile, ModelsDir + "/"} {
		if !strings.Contains(doc, "    "+name+" ") {
			t.Errorf("the package comment does not draw %s", name)
		}
	}
}

// Every format's mark has a changelog line for the value in force: a line
// "<value>: what it changed" (or "<a>, <value>: ...") in its doc comment.
func TestChangelogNamesEveryMark(t *testing.T) {
	marks := map[string]string{
		"CacheSchema": strconv.Itoa(CacheSchema), "SealFormat": strconv.Itoa(SealFormat),
		"RecordFormat": strconv.Itoa(RecordFormat), "ParserVersion": strconv.Itoa(ParserVersion),
		"SnapshotMagic": SnapshotMagic, "IndexVersion": strconv.Itoa(IndexVersion),
		"ScanMagic": ScanMagic, "ListingsMagic": ListingsMagic,
	}
	f, err := parser.ParseFile(token.NewFileSet(), "statedir.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 {
			return true
		}
		name := vs.Names[0].Name
		want, ok := marks[name]
		if !ok {
			return true
		}
		seen[name] = true
		if !changelogHas(vs.Doc.Text(), want) {
			t.Errorf("%s is %s, and its doc comment has no line %q", name, want, want+": ...")
		}
		return true
	})
	for name := range marks {
		if !seen[name] {
			t.Errorf("%s is not declared in statedir.go", name)
		}
	}
}

// changelogHas reports whether doc has a line "v: ..." or "a, v: ...".
func changelogHas(doc, v string) bool {
	for line := range strings.Lines(doc) {
		head, _, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok && slices.Contains(strings.Split(head, ", "), v) {
			return true
		}
	}
	return false
}
