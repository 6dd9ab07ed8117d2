package skillfs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestListingMatchesPaths: a folder read relative to its open parent gives
// the entries (names, order, types) and the SKILL.md stat and resources
// that reading it by path gives, for every kind of entry a skill folder
// may hold; so does a folder read by path, and a folder that cannot be
// read fails the same way.
func TestListingMatchesPaths(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "skill")
	writeSkill(t, parent, "skill", "skill", "d")
	writeFile(t, filepath.Join(dir, "scripts", "run.sh"), "echo hi\n")
	writeFile(t, filepath.Join(dir, "references", "guide.md"), "# Guide\n")
	writeFile(t, filepath.Join(dir, ".env"), "SECRET=1\n")
	for i := range 300 { // more entries than one read of the kernel returns
		writeFile(t, filepath.Join(dir, "many", fmt.Sprintf("file-%03d-%s.txt", i, strings.Repeat("x", 40))), "x")
	}
	must(t, os.Symlink("scripts/run.sh", filepath.Join(dir, "link")))
	must(t, os.Symlink("/nonexistent", filepath.Join(dir, "dangling")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "empty"), 0o755))

	var byPath, relative, noParentRead listing
	byPath.readPath(dir, 500)
	p, closeParent := openParent(parent)
	defer closeParent()
	if p == noParent {
		t.Fatal("the parent folder did not open")
	}
	relative.read(p, "skill", dir, 500, nil)
	noParentRead.read(noParent, dir, dir, 500, nil)
	for _, c := range []struct {
		name string
		l    *listing
	}{{"relative", &relative}, {"by path", &noParentRead}} {
		if c.l.err != nil || byPath.err != nil {
			t.Fatalf("%s: %v; os.ReadDir: %v", c.name, c.l.err, byPath.err)
		}
		if got, want := describe(c.l.entries), describe(byPath.entries); got != want {
			t.Errorf("%s entries:\n%s\nos.ReadDir:\n%s", c.name, got, want)
		}
		if c.l.skill == nil || byPath.skill == nil || c.l.skill.err != nil {
			t.Fatalf("%s: SKILL.md not stat'ed: %+v", c.name, c.l.skill)
		}
		g, w := c.l.skill, byPath.skill
		if g.info.Size() != w.info.Size() || !g.info.ModTime().Equal(w.info.ModTime()) || g.info.Mode() != w.info.Mode() {
			t.Errorf("%s: SKILL.md %d %v %v, os.Stat %d %v %v", c.name, g.info.Size(), g.info.ModTime(), g.info.Mode(), w.info.Size(), w.info.ModTime(), w.info.Mode())
		}
		if fmt.Sprint(g.resources, g.truncated) != fmt.Sprint(w.resources, w.truncated) || len(g.resources) != 303 {
			t.Errorf("%s: resources %d %v, by path %d %v", c.name, len(g.resources), g.truncated, len(w.resources), w.truncated)
		}
	}

	var missing listing
	missing.read(p, "gone", filepath.Join(parent, "gone"), 500, nil)
	if _, err := os.ReadDir(filepath.Join(parent, "gone")); missing.err == nil || missing.err.Error() != err.Error() {
		t.Errorf("a missing folder: %v, os.ReadDir: %v", missing.err, err)
	}
}

// describe lists entries one per line: name, type, IsDir.
func describe(entries []fs.DirEntry) string {
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintf(&b, "%s %v %v\n", e.Name(), e.Type(), e.IsDir())
	}
	return b.String()
}
