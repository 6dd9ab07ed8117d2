package allowlist

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const pin = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

func TestParse(t *testing.T) {
	in := `# approved scripts
pdf-form-filling  scripts/fill_form.py  sha256:` + strings.ToUpper(pin) + `
release-notes     ./scripts/collect_commits.sh   # unpinned
broken-line
x  ../escape.sh
y  /abs.sh
z  a.sh  md5:abc
release-notes     scripts/collect_commits.sh
`
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 2 {
		t.Errorf("entries = %d, want 2", l.Len())
	}
	e, ok := l.Lookup("pdf-form-filling", "scripts/fill_form.py")
	if !ok || e.SHA256 != pin || e.Line != 2 {
		t.Errorf("pinned entry = %+v, %v", e, ok)
	}
	if e, ok := l.Lookup("release-notes", "scripts/collect_commits.sh"); !ok || e.SHA256 != "" {
		t.Errorf("unpinned entry = %+v, %v (path must be cleaned)", e, ok)
	}
	var lines []int
	for _, p := range l.Problems {
		lines = append(lines, p.Line)
	}
	if got := fmt.Sprint(lines); got != "[4 5 6 7 8]" {
		t.Errorf("problem lines = %v, want [4 5 6 7 8]", got)
	}
	if _, ok := l.Lookup("x", "../escape.sh"); ok {
		t.Error("an escaping path was allowed")
	}
}

func TestFileReloadsOnChange(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ALLOWLIST.txt")
	f := &File{Path: p}
	l, err := f.Load()
	if err != nil || l.Len() != 0 {
		t.Fatalf("missing file = %v, %v; want empty list", l, err)
	}
	if err := os.WriteFile(p, []byte("a s.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if l, _ := f.Load(); l.Len() != 1 {
		t.Fatalf("after write: %d entries", l.Len())
	}
	if err := os.WriteFile(p, []byte("a s.sh\nb t.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Second)
	os.Chtimes(p, later, later)
	if l, _ := f.Load(); l.Len() != 2 {
		t.Errorf("after edit: %d entries, want 2", l.Len())
	}
}

func FuzzParse(f *testing.F) {
	f.Add("a scripts/x.py sha256:" + pin + "\n")
	f.Add("a ../../x\n# c\n\n b c d e\n")
	f.Fuzz(func(t *testing.T, in string) {
		l, err := Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, e := range l.entries {
			if c, err := CleanScript(e.Script); err != nil || c != e.Script {
				t.Fatalf("entry with unclean script %q", e.Script)
			}
		}
	})
}

func TestParseTools(t *testing.T) {
	in := `tool:github.create_issue  sha256:` + pin + `
tool:everything.*
tool:fs.read_file
tool:nodot
tool:fs.*  sha256:` + pin + `
tool:fs.read*
tool:fs.read_file
tool:a.b  c  d
tool:x.y  md5:1
`
	l, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"github.create_issue": pin, "everything.echo": "", "fs.read_file": "",
	} {
		e, ok := l.LookupTool(name)
		if !ok || e.SHA256 != want {
			t.Errorf("%s: %+v, %v", name, e, ok)
		}
	}
	if e, _ := l.LookupTool("everything.echo"); e.Tool != "everything.*" || e.Line != 2 {
		t.Errorf("wildcard entry %+v", e)
	}
	for _, name := range []string{"github.delete_repo", "fs.write_file", "nodot"} {
		if _, ok := l.LookupTool(name); ok {
			t.Errorf("%s is allowed", name)
		}
	}
	var lines []int
	for _, p := range l.Problems {
		lines = append(lines, p.Line)
	}
	if got := fmt.Sprint(lines); got != "[4 5 6 7 8 9]" {
		t.Errorf("problem lines = %v, want [4 5 6 7 8 9]: %+v", got, l.Problems)
	}
	if l.Len() != 0 {
		t.Errorf("tool lines counted as script entries: %d", l.Len())
	}
}
