package router

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// TestGetManifest: the manifest lists SKILL.md and every file a load
// serves, each with the size and digest of its bytes on disk now, and the
// frontmatter as written; files a load refuses are left out; a disabled
// skill has none.
func TestGetManifest(t *testing.T) {
	ws := t.TempDir()
	dir := filepath.Join(ws, "skills", "forms")
	files := map[string]string{
		"SKILL.md":            "---\nname: forms\ndescription: Fill forms\nmetadata:\n  version: \"2\"\nx-custom: [1, two]\n---\n# Forms\n",
		"references/guide.md": "# Guide\n",
		"scripts/run.py":      "print(1)\n",
		"big.bin":             string(make([]byte, 2048)),
	}
	for p, data := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, p), []byte(data), 0o644))
	}
	must(t, os.WriteFile(filepath.Join(ws, "skills", "registry.json"), []byte(`{"skills": {"off": {"enabled": false}}}`), 0o644))
	off := filepath.Join(ws, "skills", "off")
	must(t, os.MkdirAll(off, 0o755))
	must(t, os.WriteFile(filepath.Join(off, "SKILL.md"), []byte("---\nname: off\ndescription: d\n---\n"), 0o644))

	db, err := store.Open(t.TempDir(), store.Options{ParserVersion: skillmd.Version})
	must(t, err)
	t.Cleanup(func() { db.Close() })
	l, err := loader.New(loader.Config{Workspace: ws}, db)
	must(t, err)
	r := New(Config{Source: fromLoader(l), Workspace: ws, MaxResourceBytes: 1024,
		Settings: Settings{Flags: skill.Flags{SkillsV1: true}, DefaultTokenBudget: 5000, MaxTokenBudget: 50000}})
	must(t, r.Start(context.Background()))
	t.Cleanup(func() { r.Close() })
	ctx := context.Background()

	// An edit after the index was built is what the manifest describes.
	files["references/guide.md"] = "# Guide, edited\n"
	must(t, os.WriteFile(filepath.Join(dir, "references", "guide.md"), []byte(files["references/guide.md"]), 0o644))

	got, err := r.Get(ctx, skill.GetRequest{Name: "forms", Manifest: true})
	must(t, err)
	m := got.Manifest
	if m == nil {
		t.Fatal("no manifest")
	}
	var paths []string
	for _, f := range m.Files {
		paths = append(paths, f.Path)
		data, ok := files[f.Path]
		if !ok || f.Size != int64(len(data)) || f.SHA256 != skill.Hash([]byte(data)) {
			t.Errorf("%s: size %d sha256 %s; want %d %s", f.Path, f.Size, f.SHA256, len(data), skill.Hash([]byte(data)))
		}
	}
	// big.bin is over the 1,024-byte resource limit: a load refuses it.
	if want := []string{"SKILL.md", "references/guide.md", "scripts/run.py"}; !slices.Equal(paths, want) {
		t.Errorf("files %v, want %v", paths, want)
	}
	var fm map[string]any
	must(t, json.Unmarshal(m.Frontmatter, &fm))
	if fm["name"] != "forms" || fm["metadata"].(map[string]any)["version"] != "2" || len(fm["x-custom"].([]any)) != 2 {
		t.Errorf("frontmatter %s", m.Frontmatter)
	}
	if plain, err := r.Get(ctx, skill.GetRequest{Name: "forms"}); err != nil || plain.Manifest != nil {
		t.Errorf("without asking: manifest %v, err %v", plain.Manifest, err)
	}
	if _, err := r.Get(ctx, skill.GetRequest{Name: "off", Manifest: true}); skill.ErrorCode(err) != skill.CodeFailedPrecondition {
		t.Errorf("a disabled skill's manifest: %v, want failed_precondition", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
