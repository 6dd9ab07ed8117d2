package statedir

import (
	"go/parser"
	"go/token"
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
	for _, name := range []string{CacheFile, CleanNote, HolderFile, SnapshotFile, ScanFile, ListingsFile, ModelsDir + "/"} {
		if !strings.Contains(doc, "    "+name+" ") {
			t.Errorf("the package comment does not draw %s", name)
		}
	}
}
