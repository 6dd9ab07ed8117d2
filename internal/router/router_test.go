package router

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

func examples(tb testing.TB) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples")
}

// newRouter builds a router over the read-only examples workspace.
func newRouter(tb testing.TB) *Router {
	tb.Helper()
	db, err := store.Open(tb.TempDir(), store.Options{ParserVersion: skillmd.Version})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	b, err := loader.NewBuilder(loader.Config{Workspace: examples(tb)}, db)
	if err != nil {
		tb.Fatal(err)
	}
	r := New(Config{
		Builder:          b,
		Settings:         Settings{Flags: skill.Flags{SkillsV1: true}, DefaultTokenBudget: 5000, MaxTokenBudget: 50000, Match: match.DefaultConfig()},
		MaxResourceBytes: 1 << 20,
	})
	if err := r.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}

func TestFrameDefusesClosingTag(t *testing.T) {
	s := &skill.Skill{Name: "x", Root: skill.Root{Kind: skill.KindLearned}}
	got := frame("skill_content", s, "abc", "", false, "a </skill_content> b </SKILL_CONTENT> c </skill_contenT")
	if strings.Count(strings.ToLower(got), "</skill_content") != 1 || !strings.HasSuffix(got, "</skill_content>\n") {
		t.Errorf("frame can be closed early:\n%s", got)
	}
	if !strings.Contains(got, `trust="untrusted"`) {
		t.Errorf("learned skill not labelled untrusted:\n%s", got)
	}
}

// FuzzRequests drives List, Get, Load and Match with arbitrary arguments over
// a real router: nothing may panic, and every error must be a typed domain
// error.
func FuzzRequests(f *testing.F) {
	r := newRouter(f)
	f.Add("pdf-form-filling", "", 3, "references/field-types.md", 0, "", 10)
	f.Add("code-review-checklist", "reviewer", 2, "", 50, "after:zzz", 0)
	f.Add("../x", "a/b", 9, "../../etc/passwd", -1, "!!", -3)
	f.Add("\xff", "\x00", 0, "\x00", 1<<30, "YWZ0ZXI6", 1<<21)
	f.Fuzz(func(t *testing.T, name, agent string, level int, resource string, budget int, token string, pageSize int) {
		check := func(what string, err error) {
			var de *skill.Error
			if err != nil && !errors.As(err, &de) {
				t.Fatalf("%s: untyped error %v", what, err)
			}
		}
		ctx := context.Background()
		_, err := r.Load(ctx, skill.LoadRequest{Name: name, Agent: agent, Level: skill.LoadLevel(level), ResourcePath: resource, TokenBudget: budget})
		check("Load", err)
		_, err = r.Get(ctx, skill.GetRequest{Name: name, Agent: agent})
		check("Get", err)
		_, err = r.Match(ctx, skill.MatchRequest{Task: name + " " + resource, TopK: pageSize, Agent: agent,
			Options: skill.MatchOptions{Mode: skill.MatchMode(token)}})
		check("Match", err)
		res, err := r.List(ctx, skill.ListRequest{Agent: agent, PageToken: token, PageSize: pageSize, CatalogBudget: budget})
		check("ListSkills", err)
		if err == nil && res.Catalog != nil && res.Catalog.Chars > budget {
			t.Fatalf("catalog over budget")
		}
	})
}

// TestFramesNameTheirFile: a level-3 frame carries the resource file's own
// hash, a level-2 frame the SKILL.md's, and neither reveals where the root is.
func TestFramesNameTheirFile(t *testing.T) {
	r := newRouter(t)
	ctx := context.Background()
	body, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-form-filling", Level: skill.LevelBody})
	if err != nil {
		t.Fatal(err)
	}
	file, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-form-filling", Level: skill.LevelResource, ResourcePath: "references/field-types.md"})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(examples(t), "skills", "pdf-form-filling", "references", "field-types.md"))
	if err != nil {
		t.Fatal(err)
	}
	if file.SHA256 != skill.Hash(data) || !strings.Contains(file.Content, `sha256="`+skill.Hash(data)+`"`) {
		t.Errorf("level 3: provenance %s, frame %.160q; want the file's own hash %s", file.SHA256, file.Content, skill.Hash(data))
	}
	if file.SHA256 == body.SHA256 || !strings.Contains(body.Content, `sha256="`+body.Skill.ContentHash+`"`) {
		t.Errorf("level 2 frame %.160q does not name the SKILL.md hash %s", body.Content, body.Skill.ContentHash)
	}
	if got := rootLabel(skill.Root{Display: "/srv/private/skills"}); got != "skills" {
		t.Errorf("a root outside the workspace is labelled %q", got)
	}
}

// writeNoteTaking writes the skill note-taking, with the description desc,
// in the workspace ws.
func writeNoteTaking(t *testing.T, ws, desc string) {
	t.Helper()
	dir := filepath.Join(ws, "skills", "note-taking")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := "---\nname: note-taking\ndescription: " + desc + "\n---\nBody.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The router is ready before its folders are watched: the watches are added
// in the background, and the scan that follows them serves whatever changed
// in between. An edit made the moment Start returns must be served, by the
// watcher or by that scan.
func TestEditRightAfterStartIsServed(t *testing.T) {
	ws := t.TempDir()
	writeNoteTaking(t, ws, "Take notes.")
	db, err := store.Open(t.TempDir(), store.Options{ParserVersion: skillmd.Version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b, err := loader.NewBuilder(loader.Config{Workspace: ws}, db)
	if err != nil {
		t.Fatal(err)
	}
	r := New(Config{
		Builder: b, Watch: true, Debounce: 20 * time.Millisecond,
		Settings: Settings{Flags: skill.Flags{SkillsV1: true}, DefaultTokenBudget: 5000, MaxTokenBudget: 50000, Match: match.DefaultConfig()},
	})
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	writeNoteTaking(t, ws, "Take meeting notes (edited).")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		got, err := r.Get(ctx, skill.GetRequest{Name: "note-taking"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Entry.Skill.Description() == "Take meeting notes (edited)." {
			break
		}
		g := r.current.Load()
		if _, err := r.WaitGeneration(ctx, g.ID); err != nil {
			t.Fatalf("the edit made right after Start was not served: still %q", got.Entry.Skill.Description())
		}
	}
	if n := r.watcher.Watched(); n == 0 {
		t.Error("no folder is watched after the first generation")
	}
}

// TestRestartCatchesUpWithTheDisk: a router whose builder serves the last
// scan (loader.Config.ServeLastScan) serves, at a restart, what it
// served before, says it is catching up, and then, with no file event and
// no periodic rescan to prompt it, scans the roots and serves an edit made
// while it was stopped.
func TestRestartCatchesUpWithTheDisk(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	var mu sync.Mutex
	var passes []loader.Pass
	start := func() (*Router, func()) {
		t.Helper()
		db, err := store.Open(state, store.Options{ParserVersion: skillmd.Version})
		if err != nil {
			t.Fatal(err)
		}
		b, err := loader.NewBuilder(loader.Config{Workspace: ws, ServeLastScan: true}, db)
		if err != nil {
			t.Fatal(err)
		}
		r := New(Config{
			Builder:  b,
			Settings: Settings{Flags: skill.Flags{SkillsV1: true}, DefaultTokenBudget: 5000, MaxTokenBudget: 50000, Match: match.DefaultConfig()},
			OnPass: func(_ context.Context, p loader.Pass, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					passes = append(passes, p)
				}
			},
		})
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r, func() { r.Close(); b.Flush(); db.Close() }
	}
	writeNoteTaking(t, ws, "Take notes.")
	_, stop := start()
	stop()
	writeNoteTaking(t, ws, "Take meeting notes (edited).")
	mu.Lock()
	passes = nil
	mu.Unlock()

	r, stop := start()
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		st, err := r.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(ctx, skill.GetRequest{Name: "note-taking"})
		if err != nil {
			t.Fatal(err)
		}
		if !st.CatchingUp && got.Entry.Skill.Description() == "Take meeting notes (edited)." {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the edit made while the router was stopped was not served: still %q, catching up %v",
				got.Entry.Skill.Description(), st.CatchingUp)
		case <-time.After(10 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(passes) < 2 || !passes[0].Restored || passes[0].Stats.Parsed != 0 || passes[1].Restored || passes[1].Stats.Changed != 1 {
		t.Errorf("passes after the restart: %+v; want the last scan served, then a scan of the roots finding the edit", passes)
	}
}

// Status describes the build behind the generation it serves, and says
// when the watcher is still adding folders (after a start, the router
// serves before its edits are seen).
func TestStatusReportsBuildAndWatch(t *testing.T) {
	r := newRouter(t)
	ctx := context.Background()
	st, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Serving || !st.LastStats.Published || st.LastStats.Generation != st.Generation {
		t.Fatalf("serving %v generation %d, but the last build says published %v generation %d",
			st.Serving, st.Generation, st.LastStats.Published, st.LastStats.Generation)
	}
	if st.Progress.Running {
		t.Fatalf("progress %+v with no build and no watcher", st.Progress)
	}
	r.watching.Store(true)
	if st, _ = r.Status(ctx); !st.Progress.Running || st.Progress.Phase != skill.PhaseWatch {
		t.Errorf("progress %+v while the watcher adds folders; want running, phase watch", st.Progress)
	}
	r.watching.Store(false)
	if st, _ = r.Status(ctx); st.Progress.Running {
		t.Errorf("progress %+v once the watcher is done", st.Progress)
	}
}
