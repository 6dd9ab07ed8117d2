package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpsag/router/internal/catalog"
	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/statedir"
	"github.com/mcpsag/router/internal/store"
)

// writeSkill writes root/dir/SKILL.md with the given name and description.
func writeSkill(t *testing.T, root, dir, name, desc string) string {
	t.Helper()
	return writeFile(t, filepath.Join(root, dir, skillfs.SkillFile), fmt.Sprintf("---\nname: %s\ndescription: %s\n---\n# %s\n\nBody of %s.\n", name, desc, name, name))
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

type testIndex struct {
	t         *testing.T
	workspace string
	stateDir  string
	cfg       Config
	parser    int // the parser version the store is opened with
	db        *store.DB
	l         *Loader
	prev      *Generation
}

func newTestIndex(t *testing.T, workspace string, cfg Config) *testIndex {
	t.Helper()
	cfg.Workspace = workspace
	ti := &testIndex{t: t, workspace: workspace, stateDir: t.TempDir(), cfg: cfg, parser: skillmd.Version}
	ti.open()
	t.Cleanup(func() { ti.l.Flush(); ti.db.Close() })
	return ti
}

func (ti *testIndex) open() {
	db, err := store.Open(ti.stateDir, store.Options{LockTimeout: time.Second, ParserVersion: ti.parser})
	if err != nil {
		ti.t.Fatal(err)
	}
	b, err := New(ti.cfg, db)
	if err != nil {
		ti.t.Fatal(err)
	}
	ti.db, ti.l, ti.prev = db, b, nil
}

func (ti *testIndex) restart() {
	ti.l.Flush()
	if err := ti.db.Close(); err != nil {
		ti.t.Fatal(err)
	}
	ti.open()
}

// passFrom runs a pass from prev, as the loop does from the last
// generation.
func passFrom(ctx context.Context, l *Loader, prev *Generation, full bool, changed []string) (*Generation, Pass, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pass(ctx, prev, full, changed)
}

// reindex builds a generation over the previous one, as the loop does.
func (ti *testIndex) reindex(full bool) (*catalog.Catalog, skill.ReindexStats) {
	ti.t.Helper()
	g, pass, err := passFrom(context.Background(), ti.l, ti.prev, full, nil)
	if err != nil {
		ti.t.Fatalf("Build: %v", err)
	}
	ti.prev = g
	return g.Catalog, pass.Stats
}

// restart closes and reopens the store and the builder, like a router
// restart, after the last snapshot is written.

func names(skills []*skill.Skill) string {
	var out []string
	for _, s := range skills {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestWarmRestartParsesNothing(t *testing.T) {
	ws := t.TempDir()
	for i := range 20 {
		writeSkill(t, filepath.Join(ws, "skills"), fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), "does things")
	}
	ti := newTestIndex(t, ws, Config{})
	cat, st := ti.reindex(false)
	if st.Parsed != 20 || st.Added != 20 || len(cat.Visible("")) != 20 {
		t.Fatalf("cold index: %+v, %d visible; want 20 parsed and added", st, len(cat.Visible("")))
	}
	cold := ti.prev

	ti.restart()
	cat2, st := ti.reindex(false)
	if ti.prev.ContentID != cold.ContentID || ti.prev.ID != cold.ID {
		t.Errorf("same files after a restart: generation %d %s, want %d %s", ti.prev.ID, ti.prev.ContentID, cold.ID, cold.ContentID)
	}
	if st.Parsed != 0 || ti.l.ParsedTotal() != 0 {
		t.Errorf("warm restart parsed %d files (total %d), want 0", st.Parsed, ti.l.ParsedTotal())
	}
	if st.Unchanged != 20 || st.Added != 0 || st.Changed != 0 {
		t.Errorf("warm restart stats %+v, want 20 unchanged", st)
	}
	if names(cat2.Visible("")) != names(cat.Visible("")) {
		t.Errorf("skills after restart %s, want %s", names(cat2.Visible("")), names(cat.Visible("")))
	}
	if before := ti.prev; before == nil || before.ContentID == "" {
		t.Fatal("no content id")
	}

	// A full reindex reads everything again.
	_, st = ti.reindex(true)
	if st.Parsed != 20 || st.Unchanged != 20 {
		t.Errorf("full reindex %+v, want 20 parsed, 20 unchanged", st)
	}
}

func TestReindexTracksChanges(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	writeSkill(t, root, "a", "a", "alpha")
	b := writeSkill(t, root, "b", "b", "beta")
	c := writeSkill(t, root, "c", "c", "gamma")
	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)
	first := ti.prev

	_, st := ti.reindex(false)
	if st.Published || st.Parsed != 0 {
		t.Errorf("no-op rescan: %+v, want nothing parsed or published", st)
	}

	writeFile(t, b, "---\nname: b\ndescription: beta, edited\n---\nnew body\n")
	bump(t, b)
	if err := os.RemoveAll(filepath.Dir(c)); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, root, "d", "d", "delta")
	cat, st := ti.reindex(false)
	want := skill.ReindexStats{Scanned: 3, Added: 1, Changed: 1, Removed: 1, Unchanged: 1, Parsed: 2}
	if st.Scanned != want.Scanned || st.Added != want.Added || st.Changed != want.Changed ||
		st.Removed != want.Removed || st.Unchanged != want.Unchanged || st.Parsed != want.Parsed || !st.Published {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if got := names(cat.Visible("")); got != "a,b,d" {
		t.Errorf("skills = %s, want a,b,d", got)
	}
	if e, _ := cat.Lookup("b", ""); e.Skill.Description() != "beta, edited" {
		t.Errorf("b description = %q", e.Skill.Description())
	}
	if ti.prev.ID == first.ID || ti.prev.ContentID == first.ContentID {
		t.Errorf("generation %d %s did not change with the files", ti.prev.ID, ti.prev.ContentID)
	}
	body, ok, _ := ti.db.Body(mustLookup(t, cat, "b").ContentHash)
	if !ok || body != "new body\n" {
		t.Errorf("stored body of b = %q, %v", body, ok)
	}
}

// bump moves a file's modification time forward, so an edit within the
// filesystem's timestamp granularity is still seen.
func bump(t *testing.T, p string) {
	t.Helper()
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
}

func mustLookup(t *testing.T, cat *catalog.Catalog, name string) *skill.Skill {
	t.Helper()
	e, ok := cat.Lookup(name, "")
	if !ok {
		t.Fatalf("skill %s not found", name)
	}
	return e.Skill
}

func TestBadEditKeepsLastGoodVersion(t *testing.T) {
	ws := t.TempDir()
	p := writeSkill(t, filepath.Join(ws, "skills"), "pdf", "pdf", "Fill PDF forms")
	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)

	writeFile(t, p, "---\nname: pdf\ndescription: [broken\n---\n")
	bump(t, p)
	cat, st := ti.reindex(false)
	if st.Invalid != 1 {
		t.Errorf("invalid = %d, want 1", st.Invalid)
	}
	s := mustLookup(t, cat, "pdf")
	if s.Description() != "Fill PDF forms" {
		t.Errorf("served description %q, want the last good one", s.Description())
	}
	if !hasCode(s.Problems, "serving-last-good") || !hasCode(s.Problems, skillmd.CodeYAMLSyntax) {
		t.Errorf("problems %v should explain the stale version", codes(s.Problems))
	}

	// The last good version survives a restart too.
	ti.restart()
	cat, _ = ti.reindex(false)
	if s := mustLookup(t, cat, "pdf"); s.Description() != "Fill PDF forms" {
		t.Errorf("after restart served %q", s.Description())
	}

	// A new file that never parsed is not served but reported.
	writeFile(t, filepath.Join(ws, "skills", "bad", skillfs.SkillFile), "no frontmatter")
	cat, _ = ti.reindex(false)
	if _, ok := cat.Lookup("bad", ""); ok {
		t.Error("a skill that never parsed is served")
	}
	if cat.Invalid != 1 {
		t.Errorf("catalog invalid = %d, want 1", cat.Invalid)
	}
}

// TestCatalogAnyWorkers: the skills of a catalog (freshMemos) and their
// content digests (contentID) are made on several goroutines when there
// are many; made on as many as there are CPUs, one file each at least, a
// catalog and its content id are the ones made on a single goroutine, with
// registry entries, invalid files, stale versions and an edit after a
// first build among its skills.
func TestCatalogAnyWorkers(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 40 {
		writeSkill(t, root, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("skill %d about topic %d", i, i%7))
	}
	writeFile(t, filepath.Join(root, "s05", "scripts", "run.sh"), "echo")
	writeFile(t, filepath.Join(root, "bad", skillfs.SkillFile), "no frontmatter")
	writeFile(t, filepath.Join(root, skillfs.RegistryFile), `{"skills": {"s03": {"enabled": false, "owner": "ops"}, "s07": {"owner": "docs", "tags": ["x"]}, "ghost": {}}}`)
	defer func(n int) { partMin = n }(partMin)
	build := func(chunk int) (*Generation, *Generation) {
		t.Helper()
		partMin = chunk
		ti := newTestIndex(t, ws, Config{})
		ti.reindex(false)
		first := ti.prev
		p := filepath.Join(root, "s09", skillfs.SkillFile)
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "---\nname: s09\ndescription: [broken\n---\n")
		bump(t, p)
		ti.reindex(false)
		writeFile(t, p, string(orig)) // back as it was, for the next run
		bump(t, p)
		return first, ti.prev
	}
	oneFirst, oneEdited := build(1 << 30)
	manyFirst, manyEdited := build(1)
	for _, c := range []struct {
		name      string
		one, many *Generation
	}{{"first build", oneFirst, manyFirst}, {"after a bad edit", oneEdited, manyEdited}} {
		if c.one.ContentID != c.many.ContentID || c.one.digest != c.many.digest {
			t.Errorf("%s: one goroutine gives %s (input %s), several %s (input %s)", c.name, c.one.ContentID, c.one.digest, c.many.ContentID, c.many.digest)
		}
		if !reflect.DeepEqual(c.one.Catalog.Problems, c.many.Catalog.Problems) {
			t.Errorf("%s: problems differ:\n%v\n%v", c.name, c.one.Catalog.Problems, c.many.Catalog.Problems)
		}
		if names(c.one.Catalog.Winners()) != names(c.many.Catalog.Winners()) {
			t.Errorf("%s: skills differ", c.name)
		}
	}
	if s := mustLookup(t, manyEdited.Catalog, "s09"); !hasCode(s.Problems, "serving-last-good") {
		t.Errorf("the bad edit of s09 is not served as its last good version: %v", codes(s.Problems))
	}
}

func TestPrecedenceAndAgentScope(t *testing.T) {
	ws := t.TempDir()
	user := t.TempDir()
	writeSkill(t, filepath.Join(ws, "skills"), "pdf", "pdf", "project pdf")
	writeSkill(t, user, "pdf", "pdf", "user pdf")
	writeSkill(t, user, "notes", "notes", "user notes")
	writeSkill(t, filepath.Join(ws, "skills"), "Notes-Upper", "NOTES", "project notes, other case")
	writeSkill(t, filepath.Join(ws, "agents", "coder", "skills"), "pdf", "pdf", "coder pdf")
	writeSkill(t, filepath.Join(ws, "agents", "_template", "skills"), "tpl", "tpl", "ignored")

	specs := append(skillfs.DefaultRoots(), skillfs.RootSpec{Path: user, Kind: skill.KindUser})
	t.Run("project first (default)", func(t *testing.T) {
		ti := newTestIndex(t, ws, Config{Roots: specs})
		cat, _ := ti.reindex(false)
		if got := mustLookup(t, cat, "pdf").Description(); got != "project pdf" {
			t.Errorf("pdf for everyone = %q, want project pdf", got)
		}
		if got := mustLookup(t, cat, "notes").Description(); got != "project notes, other case" {
			t.Errorf("notes = %q; names must collide case-insensitively", got)
		}
		e, _ := cat.Lookup("pdf", "coder")
		if e.Skill.Description() != "coder pdf" {
			t.Errorf("pdf for coder = %q, want coder pdf", e.Skill.Description())
		}
		if got := names(cat.Visible("coder")); got != "NOTES,pdf" {
			t.Errorf("coder sees %s", got)
		}
		if got := cat.Agents(); len(got) != 1 || got[0] != "coder" {
			t.Errorf("agents = %v, want [coder]", got)
		}
		shadows := cat.Shadowed("coder")
		if len(shadows) != 3 {
			t.Fatalf("shadows for coder = %+v, want 3", shadows)
		}
		if len(cat.Shadowed("")) != 2 {
			t.Errorf("global shadows = %d, want 2", len(cat.Shadowed("")))
		}
		user := cat.Shadowed("")[1]
		if user.Winner.Root.Kind != skill.KindProject || user.Loser.Root.Kind != skill.KindUser || user.Reason != "project ranks above user" {
			t.Errorf("shadow = %+v", user)
		}
		if len(cat.Winners()) != 3 {
			t.Errorf("winners = %d, want 3 (global pdf, notes, coder pdf)", len(cat.Winners()))
		}
	})
	t.Run("user first (configured)", func(t *testing.T) {
		ti := newTestIndex(t, ws, Config{Roots: specs, Precedence: []skill.SourceKind{skill.KindUser, skill.KindProject}})
		cat, _ := ti.reindex(false)
		if got := mustLookup(t, cat, "pdf").Description(); got != "user pdf" {
			t.Errorf("pdf = %q, want user pdf", got)
		}
	})
}

func TestRegistryGovernance(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	writeSkill(t, root, "legacy", "legacy", "old exporter")
	writeSkill(t, root, "pdf", "pdf", "pdf forms")
	reg := filepath.Join(root, skillfs.RegistryFile)
	writeFile(t, reg, `{"skills": {"legacy": {"enabled": false, "owner": "ops"}, "pdf": {"owner": "docs", "tags": ["documents"]}, "ghost": {}}}`)
	ti := newTestIndex(t, ws, Config{})
	cat, _ := ti.reindex(false)

	legacy := mustLookup(t, cat, "legacy")
	if legacy.Enabled() || !strings.Contains(legacy.DisabledReason(), "enabled: false") {
		t.Errorf("legacy enabled=%v reason=%q", legacy.Enabled(), legacy.DisabledReason())
	}
	pdf := mustLookup(t, cat, "pdf")
	if !pdf.Enabled() || pdf.Registry.Owner != "docs" || strings.Join(pdf.Tags(), ",") != "documents" {
		t.Errorf("pdf registry = %+v", pdf.Registry)
	}
	if !problemsHave(cat.Problems, "registry-unknown-skill", skillfs.RegistryFile) {
		t.Errorf("unknown registry entry not reported: %v", cat.Problems)
	}

	// A broken edit keeps the last good registry: legacy stays disabled.
	writeFile(t, reg, `{"skills": {"legacy": {"enabled": tru`)
	cat, _ = ti.reindex(false)
	if mustLookup(t, cat, "legacy").Enabled() {
		t.Error("broken registry re-enabled a disabled skill")
	}
	if !problemsHave(cat.Problems, "registry-invalid", skillfs.RegistryFile) {
		t.Errorf("broken registry not reported: %v", cat.Problems)
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

func hasCode(ps []skill.Problem, code string) bool {
	for _, p := range ps {
		if p.Code == code {
			return true
		}
	}
	return false
}

func codes(ps []skill.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

// TestParserVersionBumpReparsesEveryFile: a cache written by another parser
// version is not trusted: every file is parsed again after the bump, and not
// again after that.
func TestParserVersionBumpReparsesEveryFile(t *testing.T) {
	ws := t.TempDir()
	for i := range 12 {
		writeSkill(t, filepath.Join(ws, "skills"), fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), "does things")
	}
	ti := newTestIndex(t, ws, Config{})
	if _, st := ti.reindex(false); st.Parsed != 12 {
		t.Fatalf("cold build parsed %d, want 12", st.Parsed)
	}
	ti.restart()
	if _, st := ti.reindex(false); st.Parsed != 0 {
		t.Fatalf("warm restart parsed %d, want 0", st.Parsed)
	}

	ti.parser++
	ti.restart()
	if ti.db.Reparse == "" {
		t.Error("store did not say why it dropped its records")
	}
	cat, st := ti.reindex(false)
	if st.Parsed != 12 || ti.l.ParsedTotal() != 12 {
		t.Fatalf("after a parser version bump parsed %d (total %d), want every file: 12", st.Parsed, ti.l.ParsedTotal())
	}
	if len(cat.Visible("")) != 12 {
		t.Errorf("%d skills served after the bump, want 12", len(cat.Visible("")))
	}
	ti.restart()
	if _, st := ti.reindex(false); st.Parsed != 0 || ti.db.Reparse != "" {
		t.Errorf("second restart at the new version parsed %d (reparse %q), want 0", st.Parsed, ti.db.Reparse)
	}
}

// TestIncrementalBuildsAnswerLikeFreshOnes edits a workspace step by step
// and checks that each generation, updated from the previous one (and,
// after a restart, from the snapshot the last run wrote), answers every
// task exactly as a generation built from scratch on the same files, with
// the same content id; a restart parses and embeds nothing.
func TestIncrementalBuildsAnswerLikeFreshOnes(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	topics := []string{"pdf form filling", "kubernetes deploy rollout", "sql query tuning", "git commit message",
		"image resize crop", "email triage inbox", "csv to excel", "docker image build"}
	for i := range 40 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("s%02d", i), skillfs.SkillFile), fmt.Sprintf(
			"---\nname: s%02d\ndescription: %s helper number %d\n---\n# s%02d\n\nUse this for %s. Steps follow.\n",
			i, topics[i%len(topics)], i, i, topics[(i+3)%len(topics)]))
	}
	model := newTinyManager(t)
	cfg := Config{Embedder: model}
	ti := newTestIndex(t, ws, cfg)
	tasks := []string{"fill a pdf form", "roll out the kubernetes deploy", "tune my sql", "write a commit message",
		"resize an image", "sort my inbox", "convert csv to excel then build a docker image", "s07 helper"}
	check := func(what string) {
		t.Helper()
		fresh := newTestIndex(t, ws, cfg)
		fresh.reindex(false)
		got, want := ti.prev, fresh.prev
		if got.ContentID != want.ContentID || got.ID != want.ID {
			t.Fatalf("%s: content id %s, a fresh build says %s", what, got.ContentID, want.ContentID)
		}
		for _, task := range tasks {
			for _, mode := range []skill.MatchMode{skill.ModeHybrid, skill.ModeKeyword} {
				req := skill.MatchRequest{Task: task, TopK: 5, Options: skill.MatchOptions{Mode: mode}}
				a, err := got.Index.Rank(ctx, req, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, err := want.Index.Rank(ctx, req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if x, y := rankText(a), rankText(b); x != y {
					t.Fatalf("%s: %q (%s) differs from a fresh build:\ngot  %s\nwant %s", what, task, mode, x, y)
				}
			}
		}
	}
	ti.reindex(false)
	check("cold")

	writeFile(t, filepath.Join(root, "s03", skillfs.SkillFile), "---\nname: s03\ndescription: now about docker image build\n---\nnew body about containers\n")
	bump(t, filepath.Join(root, "s03", skillfs.SkillFile))
	if err := os.RemoveAll(filepath.Join(root, "s05")); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, root, "a-new", "a-new", "kubernetes deploy helper, the newest")
	_, st := ti.reindex(false)
	if st.Embedded != 2 {
		t.Errorf("an edit and an addition embedded %d skills, want 2", st.Embedded)
	}
	check("after edits")

	ti.restart()
	g, pass, err := passFrom(ctx, ti.l, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	if st := pass.Stats; st.Parsed != 0 || st.Embedded != 0 || pass.Analyzed != 0 || pass.Reused != 40 || pass.DocumentsCached != 40 {
		t.Errorf("warm restart parsed %d, embedded %d, analyzed %d, reused %d, vectors reused %d; want 0, 0, 0, 40, 40",
			st.Parsed, st.Embedded, pass.Analyzed, pass.Reused, pass.DocumentsCached)
	}
	check("after a restart")

	// A file edited while the router was down: the first build after the
	// restart scans, parses that file alone and updates the snapshot's
	// index with it.
	ti.restart()
	p0 := filepath.Join(root, "s02", skillfs.SkillFile)
	writeFile(t, p0, "---\nname: s02\ndescription: edited while the router was down, about csv to excel\n---\nbody\n")
	bump(t, p0)
	g, pass, err = passFrom(ctx, ti.l, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	if st := pass.Stats; st.Parsed != 1 || st.Changed != 1 || st.Embedded != 1 || pass.Analyzed != 1 {
		t.Errorf("restart after an edit: parsed %d, changed %d, embedded %d, analyzed %d; want 1 of each", st.Parsed, st.Changed, st.Embedded, pass.Analyzed)
	}
	if got := mustLookup(t, g.Catalog, "s02").Description(); !strings.Contains(got, "edited") {
		t.Errorf("the first generation after a restart misses the edit made while the router was down: %q", got)
	}
	check("the scan after a restart")

	writeSkill(t, root, "b-new", "b-new", "sql query tuning for the restart")
	_, st = ti.reindex(false)
	check("an edit after a restart")

	// File events that name a skill folder's files rescan that folder
	// only; anything else scans everything.
	p := filepath.Join(root, "s07", skillfs.SkillFile)
	writeFile(t, p, "---\nname: s07\ndescription: now the image resize skill\n---\nresize and crop\n")
	bump(t, p)
	real, _ := filepath.EvalSymlinks(p)
	g, pass, err = passFrom(ctx, ti.l, ti.prev, false, []string{real})
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	if !pass.Partial || pass.Stats.Changed != 1 || pass.Analyzed != 1 {
		t.Errorf("an edit named by an event: partial %v, changed %d, analyzed %d; want a partial pass with 1 and 1", pass.Partial, pass.Stats.Changed, pass.Analyzed)
	}
	check("an edit picked up by a rescan of its folder")
	writeSkill(t, root, "c-new", "c-new", "a new folder needs a full scan")
	newDir, _ := filepath.EvalSymlinks(filepath.Join(root, "c-new"))
	g, pass, err = passFrom(ctx, ti.l, ti.prev, false, []string{newDir})
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	if pass.Partial || pass.Stats.Added != 1 {
		t.Errorf("a new skill folder: partial %v, added %d; want a full scan that adds it", pass.Partial, pass.Stats.Added)
	}
	check("a new folder")
}

func rankText(rk *match.Ranking) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %v %v %+v|", rk.Rule, rk.Probability, rk.Result.Abstained, rk.Features)
	for _, c := range rk.Ranked {
		fmt.Fprintf(&b, "%s %v %v %v %d %d;", c.Skill.Name, c.Cosine, c.BM25, c.Fused, c.DenseRank, c.BM25Rank)
	}
	return b.String()
}

// newTinyManager loads the embed package's tiny test model.
func newTinyManager(t *testing.T) *embed.Manager {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := embedtest.WriteTinyModel(dir); err != nil {
		t.Fatal(err)
	}
	m := embed.NewManager(embed.Config{Dir: dir}, nil, nil)
	if err := m.Reload(context.Background(), embed.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// TestBodyCharsChangeEmbedsAgain: the embedded text of a skill holds the
// start of its body (embed.Config.BodyChars). When that length changes,
// neither the previous generation's vectors nor the snapshot's are reused:
// the vectors are those a fresh build makes, live and after a restart.
func TestBodyCharsChangeEmbedsAgain(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 6 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("s%d", i), skillfs.SkillFile), fmt.Sprintf(
			"---\nname: s%d\ndescription: helper number %d\n---\nThe body says something different for skill %d, at length.\n", i, i, i))
	}
	model := newTinyManager(t)
	ti := newTestIndex(t, ws, Config{Embedder: model})
	ti.reindex(false)
	setBodyChars := func(n int) {
		cfg := model.Config()
		cfg.BodyChars = n
		if err := model.Reload(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
	}
	fresh := func() *Generation {
		f := newTestIndex(t, ws, Config{Embedder: model})
		f.reindex(false)
		return f.prev
	}
	sameAsFresh := func(what string) {
		t.Helper()
		want := fresh()
		for _, s := range ti.prev.Catalog.Winners() {
			w := mustLookup(t, want.Catalog, s.Name)
			if !slices.Equal(ti.prev.vectors[s], want.vectors[w]) {
				t.Fatalf("%s: the vector of %s is not the one a fresh build makes", what, s.Name)
			}
		}
	}
	setBodyChars(40)
	if _, st := ti.reindex(false); st.Embedded != 6 {
		t.Errorf("body chars changed: embedded %d, want 6", st.Embedded)
	}
	sameAsFresh("live")

	ti.restart()
	setBodyChars(0)
	g, _, err := passFrom(context.Background(), ti.l, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	sameAsFresh("after a restart")
}

// TestDamagedSnapshotIsRebuilt: a snapshot file that is truncated, has a
// flipped byte or holds garbage is set aside with a warning; the first
// build after the restart analyzes every skill and answers like a fresh
// build, never panics.
func TestDamagedSnapshotIsRebuilt(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 12 {
		writeSkill(t, root, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("skill %d about topic %d", i, i%4))
	}
	cfg := Config{Embedder: newTinyManager(t)}
	ti := newTestIndex(t, ws, cfg)
	ti.reindex(false)
	ti.l.Flush()
	path := filepath.Join(ti.stateDir, statedir.SnapshotFile)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	fresh := newTestIndex(t, ws, cfg)
	fresh.reindex(false)
	damages := map[string][]byte{
		"truncated": good[:len(good)/2],
		"flipped":   append(append(append([]byte(nil), good[:len(good)*3/4]...), good[len(good)*3/4]^0x5a), good[len(good)*3/4+1:]...),
		"garbage":   []byte("not a snapshot at all"),
		"empty":     nil,
	}
	for name, data := range damages {
		// Stopped, damaged, started: the new builder reads the file as
		// it starts.
		ti.l.Flush()
		if err := ti.db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ti.open()
		g, pass, err := passFrom(ctx, ti.l, nil, false, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ti.prev = g
		if pass.Analyzed != 12 {
			t.Errorf("%s snapshot: analyzed %d skills, want all 12", name, pass.Analyzed)
		}
		if g.ContentID != fresh.prev.ContentID {
			t.Errorf("%s snapshot: content id %s, a fresh build says %s", name, g.ContentID, fresh.prev.ContentID)
		}
		for _, task := range []string{"topic 1", "skill 7"} {
			req := skill.MatchRequest{Task: task, TopK: 3}
			a, _ := g.Index.Rank(ctx, req, nil)
			b, _ := fresh.prev.Index.Rank(ctx, req, nil)
			if x, y := rankText(a), rankText(b); x != y {
				t.Errorf("%s snapshot: %q differs from a fresh build:\n%s\n%s", name, task, x, y)
			}
		}
	}
}

// TestVectorsAreTheIndexRows: a generation's vectors are its index's own
// rows, after the first build, after an edit (whose vector block the index
// copied to change it) and after a restart from the snapshot, so a
// generation holds each vector once, and they are the vectors a fresh
// build makes.
func TestVectorsAreTheIndexRows(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 8 {
		writeSkill(t, root, fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("helper number %d for topic %d", i, i%3))
	}
	ti := newTestIndex(t, ws, Config{Embedder: newTinyManager(t)})
	held := func(what string) {
		t.Helper()
		rows := map[*skill.Skill][]float32{}
		ti.prev.Index.EachVector(func(s *skill.Skill, v []float32) { rows[s] = v })
		if len(rows) != 8 || len(ti.prev.vectors) != 8 {
			t.Fatalf("%s: %d rows, %d vectors, want 8", what, len(rows), len(ti.prev.vectors))
		}
		fresh := newTestIndex(t, ws, Config{Embedder: ti.cfg.Embedder})
		fresh.reindex(false)
		for s, v := range ti.prev.vectors {
			if row := rows[s]; len(row) == 0 || &row[0] != &v[0] {
				t.Fatalf("%s: the vector of %s is not its index row", what, s.Name)
			}
			if w := fresh.prev.vectors[mustLookup(t, fresh.prev.Catalog, s.Name)]; !slices.Equal(v, w) {
				t.Fatalf("%s: the vector of %s differs from a fresh build's", what, s.Name)
			}
		}
	}
	ti.reindex(false)
	held("first build")
	p := writeSkill(t, root, "s3", "s3", "an entirely new description of this helper")
	later := time.Now().Add(time.Minute)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if _, st := ti.reindex(false); st.Embedded != 1 {
		t.Fatalf("edit: embedded %d, want 1", st.Embedded)
	}
	held("after an edit")
	ti.restart()
	g, _, err := passFrom(context.Background(), ti.l, nil, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ti.prev = g
	held("after a restart")
}

// TestMissingBodyIsParsedAgain: a restart does not read the cached bodies
// before it scans, but a file whose cached body was damaged or lost while
// the router was down is parsed again before the first generation uses a
// body, so its body is served; the pass counts it as parsed, beside a file
// edited meanwhile. (The test damages the cache through bbolt, by the
// store's bucket name.)
func TestMissingBodyIsParsedAgain(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 6 {
		writeSkill(t, root, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("skill %d about topic %d", i, i))
	}
	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)
	damaged, lost := mustLookup(t, ti.prev.Catalog, "s02").ContentHash, mustLookup(t, ti.prev.Catalog, "s04").ContentHash
	ti.l.Flush()
	path := ti.db.Path()
	if err := ti.db.Close(); err != nil {
		t.Fatal(err)
	}
	damageBodies(t, path, damaged, lost)
	writeSkill(t, root, "s05", "s05", "skill 5 about a topic edited while the router was down")

	ti.open()
	_, st := ti.reindex(false)
	if st.Parsed != 3 || st.Changed != 1 || st.Unchanged != 5 || st.Added != 0 || st.Removed != 0 {
		t.Errorf("restart after damage: %+v; want 3 parsed (2 bodies, 1 edit), 1 changed, 5 unchanged", st)
	}
	for _, name := range []string{"s02", "s04"} {
		body, ok, err := ti.prev.Body(mustLookup(t, ti.prev.Catalog, name))
		if err != nil || !ok || !strings.Contains(body, "Body of "+name+".") {
			t.Errorf("body of %s after a restart: %q ok=%v err=%v", name, body, ok, err)
		}
	}
	ti.restart()
	if _, st := ti.reindex(false); st.Parsed != 0 {
		t.Errorf("the next restart parsed %d files, want 0", st.Parsed)
	}
}

// damageBodies flips a bit of the cached body of content hash damaged, and
// deletes that of lost (none when empty), in the closed cache at path.
func damageBodies(t *testing.T, path, damaged, lost string) {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("bodies"))
		v := bytes.Clone(b.Get([]byte(damaged)))
		v[len(v)-2] ^= 0x5a
		err := b.Put([]byte(damaged), v)
		if lost != "" {
			err = errors.Join(err, b.Delete([]byte(lost)))
		}
		return err
	})
	if err := errors.Join(err, bdb.Close()); err != nil {
		t.Fatal(err)
	}
}

// TestRestartServesTheLastScan: with ServeLastScan, a restart's first
// build serves the skill files of the scan behind the snapshot, as they
// were (edits made while it was stopped are not seen, nothing is parsed,
// the generation is the one served before), and the build after it scans
// the roots and catches up, parsing again the files whose cached body was
// damaged meanwhile. A cache that does not hold those files as that scan
// found them (here: a new cache), or a damaged scan file, makes the first
// build scan the roots instead.
func TestRestartServesTheLastScan(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 6 {
		writeSkill(t, root, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("skill %d about topic %d", i, i))
	}
	writeFile(t, filepath.Join(root, "s01", "scripts", "run.sh"), "echo run")
	ti := newTestIndex(t, ws, Config{ServeLastScan: true})
	build := func() (*Generation, Pass) {
		t.Helper()
		g, pass, err := passFrom(context.Background(), ti.l, ti.prev, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		ti.prev = g
		return g, pass
	}
	if _, pass := build(); pass.Restored {
		t.Fatal("a first start, with no scan saved, served one")
	}
	before := ti.prev
	ti.restart()
	if _, err := os.Stat(filepath.Join(ti.stateDir, statedir.ScanFile)); err != nil {
		t.Fatalf("no scan saved: %v", err)
	}

	// While the router is stopped: an edit, a new skill, a new resource,
	// and s03's cached body damaged.
	writeSkill(t, root, "s02", "s02", "skill 2 edited in place while the router was down")
	writeSkill(t, root, "s06", "s06", "skill 6 added while the router was down")
	writeFile(t, filepath.Join(root, "s01", "notes.md"), "notes")
	ti.l.Flush()
	if err := ti.db.Close(); err != nil {
		t.Fatal(err)
	}
	damageBodies(t, ti.db.Path(), mustLookup(t, before.Catalog, "s03").ContentHash, "")
	ti.open()

	g, pass := build()
	if !pass.Restored || pass.Stats.Parsed != 0 || pass.Stats.Scanned != 6 {
		t.Fatalf("restart: restored %v, parsed %d, scanned %d; want the last scan's 6 files, none parsed",
			pass.Restored, pass.Stats.Parsed, pass.Stats.Scanned)
	}
	if g.ContentID != before.ContentID {
		t.Errorf("the restored generation is %s, want the one served before the restart, %s", g.ContentID, before.ContentID)
	}
	if got := mustLookup(t, g.Catalog, "s02").Description(); strings.Contains(got, "edited") {
		t.Errorf("the restored s02 is the edit: %q", got)
	}
	if len(mustLookup(t, g.Catalog, "s01").Resources) != 1 || len(pass.Dirs) == 0 {
		t.Errorf("restored s01 resources %+v, folders %d; want the last scan's", mustLookup(t, g.Catalog, "s01").Resources, len(pass.Dirs))
	}
	if _, ok, err := g.Body(mustLookup(t, g.Catalog, "s03")); ok || err != nil {
		t.Errorf("the damaged body of s03 is served: ok=%v err=%v", ok, err)
	}

	g, pass = build()
	if pass.Restored || pass.Stats.Parsed != 3 || pass.Stats.Added != 1 || pass.Stats.Changed != 1 {
		t.Errorf("catching up: restored %v, %+v; want 3 parsed (s02, s06, s03 for its body), 1 added, 1 changed",
			pass.Restored, pass.Stats)
	}
	if got := mustLookup(t, g.Catalog, "s02").Description(); !strings.Contains(got, "edited") {
		t.Errorf("s02 after catching up: %q, want the edit", got)
	}
	if len(mustLookup(t, g.Catalog, "s01").Resources) != 2 {
		t.Errorf("s01 resources after catching up: %+v", mustLookup(t, g.Catalog, "s01").Resources)
	}
	if body, ok, err := g.Body(mustLookup(t, g.Catalog, "s03")); !ok || err != nil || !strings.Contains(body, "Body of s03.") {
		t.Errorf("s03's body after catching up: %q ok=%v err=%v", body, ok, err)
	}
	caughtUp := g

	ti.restart()
	if g, pass := build(); !pass.Restored || g.ContentID != caughtUp.ContentID {
		t.Errorf("the next restart: restored %v, generation %s; want the caught-up one, %s", pass.Restored, g.ContentID, caughtUp.ContentID)
	}

	ti.l.Flush()
	if err := ti.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(ti.db.Path()); err != nil {
		t.Fatal(err)
	}
	ti.open()
	if g, pass := build(); pass.Restored || pass.Stats.Parsed != 7 || g.ContentID != caughtUp.ContentID {
		t.Errorf("a new cache: restored %v, parsed %d, generation %s; want a scan parsing the 7 files, giving %s",
			pass.Restored, pass.Stats.Parsed, g.ContentID, caughtUp.ContentID)
	}

	ti.restart()
	flipByte(t, filepath.Join(ti.stateDir, statedir.ScanFile))
	ti.restart()
	if _, pass := build(); pass.Restored || pass.Stats.Parsed != 0 {
		t.Errorf("a damaged scan file: restored %v, parsed %d; want a scan, parsing nothing", pass.Restored, pass.Stats.Parsed)
	}
	// That scan is saved, though the snapshot on disk is of its generation.
	ti.restart()
	if _, pass := build(); !pass.Restored {
		t.Error("the restart after a damaged scan file did not serve the scan saved since")
	}
}

// TestMovedModelKeepsSnapshotVectors: the same model files in another
// folder (a state folder moved or restored elsewhere holds the bundled
// model) make the same vectors, so a restart takes them from the index
// snapshot: with the vector cache emptied, it embeds nothing.
func TestMovedModelKeepsSnapshotVectors(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 6 {
		writeSkill(t, root, fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("helper number %d for topic %d", i, i%3))
	}
	first := newTinyManager(t)
	ti := newTestIndex(t, ws, Config{Embedder: first})
	if _, st := ti.reindex(false); st.Embedded != 6 {
		t.Fatalf("first build embedded %d, want 6", st.Embedded)
	}
	moved := newTinyManager(t)
	a, b := first.Identity(), moved.Identity()
	if a.Fingerprint != b.Fingerprint || a.Path == b.Path {
		t.Fatalf("want the same model in two folders: %+v, %+v", a, b)
	}
	ti.l.Flush()
	if _, err := ti.db.PruneVectors(a.Fingerprint, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	ti.cfg.Embedder = moved
	ti.restart()
	if _, st := ti.reindex(false); st.Embedded != 0 {
		t.Errorf("a restart with the model moved embedded %d skills, want 0 (the snapshot's vectors)", st.Embedded)
	}
}

// TestRestartReusesFolderListings: a restart's scan takes the folders
// unchanged since the last full scan from the listings that scan saved,
// and sees every change made while the router was down: a resource added,
// a SKILL.md edited in place, a skill added. Damaged listings are ignored.
func TestRestartReusesFolderListings(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	for i := range 6 {
		writeSkill(t, root, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("skill %d about topic %d", i, i))
	}
	writeFile(t, filepath.Join(root, "s01", "scripts", "run.sh"), "echo run")
	time.Sleep(1100 * time.Millisecond) // older than the margin under which a folder's listing is not kept
	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)
	ti.restart()
	listings := filepath.Join(ti.stateDir, statedir.ListingsFile)
	if _, err := os.Stat(listings); err != nil {
		t.Fatalf("no folder listings saved: %v", err)
	}

	writeFile(t, filepath.Join(root, "s01", "notes.md"), "notes")
	writeSkill(t, root, "s02", "s02", "skill 2 edited in place while the router was down")
	writeSkill(t, root, "s06", "s06", "skill 6 added while the router was down")
	build := func() Pass {
		t.Helper()
		g, pass, err := passFrom(context.Background(), ti.l, nil, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustLookup(t, g.Catalog, "s01").Resources; len(got) != 2 {
			t.Errorf("s01 resources %+v, want notes.md and scripts/run.sh", got)
		}
		if got := mustLookup(t, g.Catalog, "s02").Description(); !strings.Contains(got, "edited in place") {
			t.Errorf("s02 description %q, want the edit", got)
		}
		mustLookup(t, g.Catalog, "s06")
		return pass
	}
	pass := build()
	if pass.FoldersReused != 5 || pass.Stats.Parsed != 2 {
		t.Errorf("restart reused %d folder listings and parsed %d files; want 5 (s00, s02 to s05) and 2 (s02, s06)",
			pass.FoldersReused, pass.Stats.Parsed)
	}

	ti.l.Flush() // the restart saved listings again: they changed
	flipByte(t, listings)
	ti.restart()
	if pass := build(); pass.FoldersReused != 0 {
		t.Errorf("damaged listings: %d folders reused", pass.FoldersReused)
	}
}

// TestLeftoverTempFilesRemoved: the temporary files of snapshot and
// listings writes that never finished (a process killed mid-write) are
// removed when a builder opens the state folder; nothing else is.
func TestLeftoverTempFilesRemoved(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, filepath.Join(ws, "skills"), "s0", "s0", "a skill")
	ti := newTestIndex(t, ws, Config{})
	ti.reindex(false)
	ti.l.Flush()
	leftovers := []string{".index.snapshot-123.tmp", ".scan.listings-9.tmp", ".index-77.tmp"}
	kept := []string{"notes.tmp", ".other-1.tmp", "index.snapshot.bak"}
	for _, n := range append(slices.Clone(leftovers), kept...) {
		writeFile(t, filepath.Join(ti.stateDir, n), "x")
	}
	ti.restart()
	for _, n := range leftovers {
		if _, err := os.Stat(filepath.Join(ti.stateDir, n)); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", n, err)
		}
	}
	for _, n := range append(kept, statedir.SnapshotFile, statedir.CacheFile) {
		if _, err := os.Stat(filepath.Join(ti.stateDir, n)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// flipByte damages the file at path: one bit of its middle byte flipped.
func flipByte(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestCacheReplacedUnderTheBuilder: the cache file is cut short while the
// builder serves from it; the call that finds it fails with
// store.ErrDamaged and the store replaces it with an empty cache. The next
// build, even one that would scan nothing, parses every file again, so
// that every body is in the new cache and is served.
func TestCacheReplacedUnderTheBuilder(t *testing.T) {
	ws := t.TempDir()
	for i := range 30 {
		writeSkill(t, filepath.Join(ws, "skills"), fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), "does things")
	}
	ti := newTestIndex(t, ws, Config{})
	cat, _ := ti.reindex(false)
	if err := os.Truncate(ti.db.Path(), 0); err != nil {
		t.Fatal(err)
	}
	s := cat.Visible("")[0]
	if _, _, err := ti.prev.Body(s); skill.ErrorCode(err) != skill.CodeUnavailable {
		t.Fatalf("Body from a cache cut short: %v, want the store's damage as the domain's %s", err, skill.CodeUnavailable)
	}
	if ti.db.Replacements() != 1 {
		t.Fatalf("Replacements = %d, want 1", ti.db.Replacements())
	}
	cat, st := ti.reindex(false)
	if st.Parsed != 30 {
		t.Errorf("the build after the replacement parsed %d files, want all 30", st.Parsed)
	}
	for _, s := range cat.Visible("") {
		if body, ok, err := ti.prev.Body(s); err != nil || !ok || !strings.Contains(body, s.Name) {
			t.Errorf("%s: body %q, ok %v, err %v after the rebuild", s.Name, body, ok, err)
		}
	}
	if _, st := ti.reindex(false); st.Parsed != 0 {
		t.Errorf("the build after that parsed %d files, want none", st.Parsed)
	}
}

// TestFullReindexParsesEveryFileKeepsVectors pins what a full reindex
// rebuilds: it parses every file again, so an edit that kept the file's size
// and modification time (which the incremental scan cannot see) is served,
// and it embeds only the texts that changed: a vector is a function of the
// embedded text and the model, and one of an unchanged text is reused.
func TestFullReindexParsesEveryFileKeepsVectors(t *testing.T) {
	ws := t.TempDir()
	root := filepath.Join(ws, "skills")
	var edited string
	for i := range 4 {
		edited = writeSkill(t, root, fmt.Sprintf("s%d", i), fmt.Sprintf("s%d", i), fmt.Sprintf("about topic %d", i))
	}
	ti := newTestIndex(t, ws, Config{Embedder: newTinyManager(t)})
	if _, st := ti.reindex(false); st.Embedded != 4 {
		t.Fatalf("first build embedded %d skills, want 4", st.Embedded)
	}
	if _, st := ti.reindex(true); st.Parsed != 4 || st.Embedded != 0 {
		t.Errorf("full reindex of unchanged files: parsed %d, embedded %d; want 4 and 0", st.Parsed, st.Embedded)
	}
	fi, err := os.Stat(edited)
	if err != nil {
		t.Fatal(err)
	}
	writeSkill(t, root, "s3", "s3", "about tonic 3") // as long as "about topic 3"
	if err := os.Chtimes(edited, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if _, st := ti.reindex(false); st.Parsed != 0 {
		t.Fatalf("the incremental scan parsed %d files; the edit was meant to keep size and time", st.Parsed)
	}
	cat, st := ti.reindex(true)
	if st.Parsed != 4 || st.Embedded != 1 {
		t.Errorf("full reindex after a same-size, same-time edit: parsed %d, embedded %d; want 4 and 1", st.Parsed, st.Embedded)
	}
	if ent, ok := cat.Lookup("s3", ""); !ok || ent.Skill.Description() != "about tonic 3" {
		t.Errorf("the edit is not served after a full reindex")
	}
}
