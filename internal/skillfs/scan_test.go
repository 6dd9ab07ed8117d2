package skillfs

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

// writeSkill writes root/dir/SKILL.md with the given name and description.
func writeSkill(t *testing.T, root, dir, name, desc string) string {
	t.Helper()
	return writeFile(t, filepath.Join(root, dir, SkillFile), fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n# %s\n\nBody of %s.\n", name, desc, name, name))
}

func writeFile(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestScanRules(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	outside := t.TempDir()
	writeSkill(t, root, "plain", "plain", "d")
	writeSkill(t, root, "category/nested", "nested", "d")
	writeSkill(t, root, "_draft", "draft", "d")
	writeSkill(t, root, ".hidden", "hidden-dir", "d")
	writeSkill(t, root, "node_modules/dep", "dep", "d")
	writeSkill(t, root, "parent", "parent", "d")
	writeSkill(t, root, "parent/examples/child", "child", "d") // inside a skill: a resource, not a skill
	writeSkill(t, outside, "evil", "evil", "d")
	writeSkill(t, root, "target", "target", "d")
	must(t, os.Symlink(filepath.Join(outside, "evil"), filepath.Join(root, "escape")))
	must(t, os.Symlink(filepath.Join(root, "target"), filepath.Join(root, "category", "alias")))
	must(t, os.MkdirAll(filepath.Join(root, "loose"), 0o755))
	must(t, os.Symlink(filepath.Join(outside, "evil", SkillFile), filepath.Join(root, "loose", SkillFile)))
	must(t, os.Symlink(filepath.Join(root, "loop"), filepath.Join(root, "loop"))) // dangling self-loop
	// SKILL.md links that loop, and one to nothing: named as such, not as
	// links outside the root.
	must(t, os.MkdirAll(filepath.Join(root, "looping"), 0o755))
	must(t, os.Symlink(SkillFile, filepath.Join(root, "looping", SkillFile)))
	must(t, os.MkdirAll(filepath.Join(root, "pingpong"), 0o755))
	must(t, os.Symlink("other.md", filepath.Join(root, "pingpong", SkillFile)))
	must(t, os.Symlink(SkillFile, filepath.Join(root, "pingpong", "other.md")))
	must(t, os.MkdirAll(filepath.Join(root, "dangling"), 0o755))
	must(t, os.Symlink("gone.md", filepath.Join(root, "dangling", SkillFile)))

	roots, err := ExpandRoots(ws, DefaultRoots())
	if err != nil {
		t.Fatal(err)
	}
	res := Scan(roots, DefaultScanLimits, nil)
	var got []string
	for _, f := range res.Files {
		got = append(got, f.RelPath)
	}
	want := "category/nested/SKILL.md,parent/SKILL.md,plain/SKILL.md,target/SKILL.md"
	if strings.Join(got, ",") != want {
		t.Errorf("found %v, want %s", got, want)
	}
	if !problemsHave(res.Problems, "symlink-escape", "escape") || !problemsHave(res.Problems, "symlink-escape", "loose") {
		t.Errorf("escaping symlinks not reported: %v", res.Problems)
	}
	if !problemsHave(res.Problems, "symlink-loop", "looping") || !problemsHave(res.Problems, "symlink-loop", "pingpong") ||
		!problemsHave(res.Problems, "symlink-broken", "dangling") {
		t.Errorf("SKILL.md links that loop or lead nowhere not named so: %v", res.Problems)
	}
	for _, dir := range []string{"looping", "pingpong", "dangling"} {
		if problemsHave(res.Problems, "symlink-escape", dir) {
			t.Errorf("the SKILL.md link in %s is reported as leading outside the root: %v", dir, res.Problems)
		}
	}
	for _, f := range res.Files {
		if f.RelPath == "parent/SKILL.md" {
			if len(f.Resources) != 1 || f.Resources[0].Path != "examples/child/SKILL.md" {
				t.Errorf("parent resources = %v, want the nested SKILL.md as a resource", f.Resources)
			}
		}
	}
}

func problemsHave(ps []skill.Problem, code, fileSubstr string) bool {
	for _, p := range ps {
		if p.Code == code && strings.Contains(p.File, fileSubstr) {
			return true
		}
	}
	return false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestScanSurvivesUnreadableFolder(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("running as root: permission bits do not stop reads")
	}
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	writeSkill(t, root, "ok", "ok", "d")
	writeSkill(t, root, "locked/inner", "inner", "d")
	must(t, os.Chmod(filepath.Join(root, "locked"), 0))
	t.Cleanup(func() { os.Chmod(filepath.Join(root, "locked"), 0o755) })
	roots, _ := ExpandRoots(ws, DefaultRoots())
	res := Scan(roots, DefaultScanLimits, nil)
	if len(res.Files) != 1 || !problemsHave(res.Problems, "dir-unreadable", "locked") {
		t.Errorf("files %v problems %v; want ok found and locked reported", res.Files, res.Problems)
	}
}

func TestExpandRootsErrors(t *testing.T) {
	for _, spec := range []RootSpec{
		{Path: ""},
		{Path: "a/*/b/*", Kind: skill.KindProject},
		{Path: "agents/x*/skills", Kind: skill.KindProject},
		{Path: "agents/skills", Kind: skill.KindProject, Agent: "*"},
	} {
		if _, err := ExpandRoots(t.TempDir(), []RootSpec{spec}); err == nil {
			t.Errorf("ExpandRoots(%+v) = nil error", spec)
		}
	}
}

func TestScanSkillDirMatchesScan(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b/c"} {
		if err := os.MkdirAll(filepath.Join(root, d, "refs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, SkillFile), []byte("---\nname: x\ndescription: y\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, "refs", "r.md"), []byte("ref"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := skill.Root{Path: root, Display: "skills", Kind: skill.KindProject}
	res := Scan([]skill.Root{r}, DefaultScanLimits, nil)
	if len(res.Files) != 2 {
		t.Fatalf("scan found %d skills", len(res.Files))
	}
	for _, want := range res.Files {
		got, ok := ScanSkillDir(r, want.Dir, DefaultScanLimits)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("ScanSkillDir(%s) = %+v, %v; Scan found %+v", want.Dir, got, ok, want)
		}
	}
	if err := os.Remove(filepath.Join(root, "a", SkillFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok := ScanSkillDir(r, filepath.Join(root, "a"), DefaultScanLimits); ok {
		t.Error("a folder without SKILL.md scanned as a skill")
	}
	if _, ok := ScanSkillDir(r, t.TempDir(), DefaultScanLimits); ok {
		t.Error("a folder outside the root scanned as a skill")
	}
}

// TestReadAheadGivesTheSameScan scans a root wide enough to be read ahead
// (skill folders, ones with resources and a symbolic-link SKILL.md,
// escaping links, ignored and empty folders, nested categories) with one
// CPU, where nothing is read ahead, and with four, and under a folder limit
// that cuts the walk short: the results must be identical.
func TestReadAheadGivesTheSameScan(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	outside := t.TempDir()
	writeSkill(t, outside, "evil", "evil", "d")
	for i := range 3 * readAheadMin {
		dir := fmt.Sprintf("s%03d", i)
		switch i % 6 {
		case 0:
			writeSkill(t, root, dir, dir, "d")
		case 1:
			writeSkill(t, root, dir, dir, "d")
			writeFile(t, filepath.Join(root, dir, "scripts", "run.sh"), "echo")
			writeFile(t, filepath.Join(root, dir, "references", "a.md"), "a")
		case 2:
			must(t, os.MkdirAll(filepath.Join(root, dir), 0o755))
			must(t, os.Symlink(filepath.Join(outside, "evil", SkillFile), filepath.Join(root, dir, SkillFile)))
		case 3:
			must(t, os.Symlink(filepath.Join(outside, "evil"), filepath.Join(root, dir)))
		case 4:
			for j := range readAheadMin + 1 {
				writeSkill(t, root, fmt.Sprintf("%s/c%02d", dir, j), fmt.Sprintf("%s-c%02d", dir, j), "d")
			}
		case 5:
			must(t, os.MkdirAll(filepath.Join(root, "_"+dir, "x"), 0o755))
			must(t, os.MkdirAll(filepath.Join(root, dir, "empty"), 0o755))
		}
	}
	roots, err := ExpandRoots(ws, DefaultRoots())
	if err != nil {
		t.Fatal(err)
	}
	for _, lim := range []ScanLimits{DefaultScanLimits, {MaxDepth: 6, MaxDirs: 40, MaxResources: 1}} {
		prev := runtime.GOMAXPROCS(1)
		one := Scan(roots, lim, nil)
		runtime.GOMAXPROCS(4)
		four := Scan(roots, lim, nil)
		runtime.GOMAXPROCS(prev)
		if len(one.Files) < 2*readAheadMin {
			t.Fatalf("limits %+v: only %d skills found; the walk is not wide enough to read ahead", lim, len(one.Files))
		}
		one.Listings, four.Listings = nil, nil
		if !reflect.DeepEqual(one, four) {
			t.Errorf("limits %+v: reading ahead changed the scan:\none CPU:   %d files, %d dirs, problems %v\nfour CPUs: %d files, %d dirs, problems %v",
				lim, len(one.Files), len(one.Dirs), one.Problems, len(four.Files), len(four.Dirs), four.Problems)
		}
	}
}

// TestScanReportsFoldersTooDeep: a SKILL.md more than MaxDepth levels below
// its root is not found, and the scan says so, once per root; a tree that
// ends at the limit is not reported.
func TestScanReportsFoldersTooDeep(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	writeSkill(t, root, "a/b/c/d/e/f", "at-the-limit", "d")
	writeSkill(t, root, "g/h/i/j/k/l/m", "too-deep", "d")
	writeSkill(t, root, "n/o/p/q/r/s/t/u", "deeper-still", "d")
	roots, _ := ExpandRoots(ws, DefaultRoots())
	res := Scan(roots, DefaultScanLimits, nil)
	if len(res.Files) != 1 || !strings.HasSuffix(res.Files[0].RelPath, "f/SKILL.md") {
		t.Errorf("found %v; want only the skill at the limit", res.Files)
	}
	n := 0
	for _, p := range res.Problems {
		if p.Code == "scan-limit" && strings.Contains(p.Message, "more than 6 levels") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d reports of folders too deep, want 1: %v", n, res.Problems)
	}

	shallow := t.TempDir()
	writeSkill(t, filepath.Join(shallow, "skills"), "a/b/c/d/e/f", "at-the-limit", "d")
	roots, _ = ExpandRoots(shallow, DefaultRoots())
	if res := Scan(roots, DefaultScanLimits, nil); len(res.Problems) != 0 {
		t.Errorf("a tree ending at the limit reported %v", res.Problems)
	}
}
