package loader

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
)

// served keeps the last generation a loader published, as a router does.
type served struct {
	mu        sync.Mutex
	g         *Generation
	published chan struct{} // closed and replaced at each publish
}

func newServed() *served { return &served{published: make(chan struct{})} }

func (s *served) publish(g *Generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.g = g
	close(s.published)
	s.published = make(chan struct{})
}

// current returns the generation served and a channel closed at the next
// publish.
func (s *served) current() (*Generation, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.g, s.published
}

// description returns the description of the skill name in the
// generation served.
func (s *served) description(t *testing.T, name string) string {
	t.Helper()
	g, _ := s.current()
	ent, ok := g.Catalog.Lookup(name, "")
	if !ok {
		t.Fatalf("%s is not served", name)
	}
	return ent.Skill.Description()
}

// startLoader opens the store in state and starts a loader of ws on it;
// stop closes both.
func startLoader(t *testing.T, ws, state string, cfg Config) (*Loader, *served, func()) {
	t.Helper()
	db, err := store.Open(state, store.Options{ParserVersion: skillmd.Version})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workspace = ws
	l, err := New(cfg, db)
	if err != nil {
		t.Fatal(err)
	}
	s := newServed()
	if err := l.Start(context.Background(), s.publish); err != nil {
		t.Fatal(err)
	}
	return l, s, func() { l.Close(); db.Close() }
}

// TestEditRightAfterStartIsServed: the first generation is published
// before the watches are in place, which are added in the background, and
// the scan that follows them serves whatever changed in between. An edit
// made the moment Start returns must be served, by the watcher or by that
// scan.
func TestEditRightAfterStartIsServed(t *testing.T) {
	ws := t.TempDir()
	skills := filepath.Join(ws, "skills")
	writeSkill(t, skills, "note-taking", "note-taking", "Take notes.")
	l, s, stop := startLoader(t, ws, t.TempDir(), Config{Watch: true, Debounce: 20 * time.Millisecond})
	defer stop()
	writeSkill(t, skills, "note-taking", "note-taking", "Take meeting notes (edited).")
	timeout := time.After(20 * time.Second)
	for s.description(t, "note-taking") != "Take meeting notes (edited)." {
		_, next := s.current()
		select {
		case <-next:
		case <-timeout:
			t.Fatalf("the edit made right after Start was not served: still %q", s.description(t, "note-taking"))
		}
	}
	if n := l.tracker.watcher.Watched(); n == 0 {
		t.Error("no folder is watched after the first generation")
	}
}

// TestRestartCatchesUpWithTheDisk: a loader that serves the last scan
// (Config.ServeLastScan) publishes, at a restart, what it published
// before, says it is catching up, and then, with no file event and no
// periodic rescan to prompt it, scans the roots and publishes an edit made
// while it was stopped.
func TestRestartCatchesUpWithTheDisk(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	skills := filepath.Join(ws, "skills")
	var mu sync.Mutex
	var passes []Pass
	cfg := Config{ServeLastScan: true, OnPass: func(_ context.Context, p Pass, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			passes = append(passes, p)
		}
	}}
	writeSkill(t, skills, "note-taking", "note-taking", "Take notes.")
	_, _, stop := startLoader(t, ws, state, cfg)
	stop()
	writeSkill(t, skills, "note-taking", "note-taking", "Take meeting notes (edited).")
	mu.Lock()
	passes = nil
	mu.Unlock()

	l, s, stop := startLoader(t, ws, state, cfg)
	defer stop()
	timeout := time.After(20 * time.Second)
	for {
		var st skill.Status
		l.Describe(&st)
		desc := s.description(t, "note-taking")
		if !st.CatchingUp && desc == "Take meeting notes (edited)." {
			break
		}
		select {
		case <-timeout:
			t.Fatalf("the edit made while the loader was stopped was not published: still %q, catching up %v", desc, st.CatchingUp)
		case <-time.After(10 * time.Millisecond):
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(passes) < 2 || !passes[0].Restored || passes[0].Stats.Parsed != 0 || passes[1].Restored || passes[1].Stats.Changed != 1 {
		t.Errorf("passes after the restart: %+v; want the last scan served, then a scan of the roots finding the edit", passes)
	}
}

// TestDescribeSaysWatch: after a start, the watcher adds its folders while
// the generation is served; Describe says so.
func TestDescribeSaysWatch(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, filepath.Join(ws, "skills"), "note-taking", "note-taking", "Take notes.")
	l, _, stop := startLoader(t, ws, t.TempDir(), Config{})
	defer stop()
	var st skill.Status
	if l.Describe(&st); st.Progress.Running {
		t.Fatalf("progress %+v with no pass and no watcher", st.Progress)
	}
	l.tracker.syncing.Store(true)
	if l.Describe(&st); !st.Progress.Running || st.Progress.Phase != skill.PhaseWatch {
		t.Errorf("progress %+v while the watcher adds folders; want running, phase watch", st.Progress)
	}
	l.tracker.syncing.Store(false)
	if l.Describe(&st); st.Progress.Running {
		t.Errorf("progress %+v once the watcher is done", st.Progress)
	}
}

// TestReindexBeforeStart: a loader that has not started answers a Reindex
// with Unavailable, and publishes nothing.
func TestReindexBeforeStart(t *testing.T) {
	ti := newTestIndex(t, t.TempDir(), Config{})
	if _, err := ti.l.Reindex(context.Background(), false); skill.ErrorCode(err) != skill.CodeUnavailable {
		t.Errorf("Reindex before Start: %v; want Unavailable", err)
	}
}

// TestPassSaysFull: a pass says whether it read and parsed every file
// again (Reindex with full) or only what changed, as the reindex metric's
// full label reports it.
func TestPassSaysFull(t *testing.T) {
	ws := t.TempDir()
	writeSkill(t, filepath.Join(ws, "skills"), "note-taking", "note-taking", "Take notes.")
	var mu sync.Mutex
	var fulls []bool
	cfg := Config{OnPass: func(_ context.Context, p Pass, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err == nil {
			fulls = append(fulls, p.Full)
		}
	}}
	l, _, stop := startLoader(t, ws, t.TempDir(), cfg)
	defer stop()
	for _, full := range []bool{true, false} {
		mu.Lock()
		fulls = nil
		mu.Unlock()
		if _, err := l.Reindex(context.Background(), full); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := slices.Clone(fulls)
		mu.Unlock()
		if len(got) == 0 || got[len(got)-1] != full {
			t.Errorf("Reindex(full %v): passes said full %v", full, got)
		}
	}
}
