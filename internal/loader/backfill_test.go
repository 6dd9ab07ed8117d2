package loader

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/embed/embedtest"
	"github.com/mcpsag/router/internal/skill"
)

// newTinyManagerDim loads a tiny test model of dim dimensions.
func newTinyManagerDim(t *testing.T, dim int) *embed.Manager {
	t.Helper()
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("tiny-%d", dim))
	if _, err := embedtest.WriteTinyModelDim(dir, dim); err != nil {
		t.Fatal(err)
	}
	m := embed.NewManager(embed.Config{Dir: dir}, nil, nil)
	if err := m.Reload(context.Background(), embed.Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// waitServing waits until the generation s serves has vectors of the model
// fingerprint ("" for keywords only), and returns it.
func waitServing(t *testing.T, s *served, fingerprint string) *Generation {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		g, next := s.current()
		if g != nil && g.Model.Fingerprint == fingerprint {
			return g
		}
		select {
		case <-next:
		case <-deadline:
			got := "nothing"
			if g != nil {
				got = fmt.Sprintf("model %q", g.Model.Name)
			}
			t.Fatalf("the model %s was never served; last served: %s", fingerprint, got)
		}
	}
}

// TestStartServesAtOnceThenThePrimaryModel: with more new skill texts than a
// pass may embed with the primary model, the first generation serves the
// fast model's vectors (or keywords without one), the primary model's
// texts are embedded in the background, and the generation that follows
// serves its vectors, equal to those a pass that embeds everything makes.
// Status says which model is served, and how far the background has come.
func TestStartServesAtOnceThenThePrimaryModel(t *testing.T) {
	for _, withFast := range []bool{true, false} {
		t.Run(fmt.Sprintf("fast=%v", withFast), func(t *testing.T) {
			ws := t.TempDir()
			for i := range 12 {
				writeSkill(t, filepath.Join(ws, "skills"), fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i),
					fmt.Sprintf("helper number %d for pdf forms and images", i))
			}
			primary := newTinyManagerDim(t, 32)
			cfg := Config{Embedder: primary, Background: true, SyncDocuments: 3}
			var fast *embed.Manager
			if withFast {
				fast = newTinyManagerDim(t, 16)
				cfg.Fast = fast
			}
			l, s, stop := startLoader(t, ws, t.TempDir(), cfg)
			defer stop()

			first, _ := s.current()
			wantFirst := ""
			if withFast {
				wantFirst = fast.Identity().Fingerprint
			}
			if first.Model.Fingerprint != wantFirst {
				t.Fatalf("first generation serves model %q, want the fast model (%q) before the primary model's vectors exist",
					first.Model.Name, wantFirst)
			}
			if withFast && len(first.vectors) != 12 {
				t.Errorf("first generation holds %d fast vectors, want 12", len(first.vectors))
			}

			g := waitServing(t, s, primary.Identity().Fingerprint)
			want := newTestIndex(t, ws, Config{Embedder: primary})
			want.reindex(false)
			for _, sk := range g.Catalog.Winners() {
				w := mustLookup(t, want.prev.Catalog, sk.Name)
				if !slices.Equal(g.vectors[sk], want.prev.vectors[w]) {
					t.Fatalf("the background vector of %s is not the one a pass that embeds everything makes", sk.Name)
				}
			}
			if got := g.ServedModel(); got != primary.Identity().Fingerprint {
				t.Errorf("served model %q, want the primary model's %q", got, primary.Identity().Fingerprint)
			}
			var st skill.Status
			l.Describe(&st)
			if st.Backfill.Model != "" {
				t.Errorf("Status: backfill %+v once every vector is served, want none", st.Backfill)
			}

			// An edit of fewer texts than the bound is embedded by the
			// pass itself: the primary model stays served.
			writeSkill(t, filepath.Join(ws, "skills"), "s03", "s03", "renamed helper that resizes images")
			if _, err := l.Reindex(context.Background(), false); err != nil {
				t.Fatal(err)
			}
			after, _ := s.current()
			if after.Model.Fingerprint != primary.Identity().Fingerprint {
				t.Fatalf("after a small edit the generation serves %q, want the primary model", after.Model.Name)
			}
			if ent, ok := after.Catalog.Lookup("s03", ""); !ok || after.vectors[ent.Skill] == nil {
				t.Fatal("the edited skill has no vector")
			}
		})
	}
}

// TestBackfillStatusCountsProgress: while the background embeds, Status
// names the model and counts the texts; the work a pass asks for replaces
// the work under way.
func TestBackfillStatusCountsProgress(t *testing.T) {
	m := newTinyManagerDim(t, 16)
	b := newBackfill(m, nil, nil)
	if st := b.status(); st.Model != "" {
		t.Fatalf("a new backfill reports %+v, want nothing under way", st)
	}
	b.want(m.Identity(), []string{"a", "b", "c"}, "keywords")
	if st := b.status(); st.Model != m.Identity().Name || st.Total != 3 || st.Done != 0 {
		t.Fatalf("status %+v, want model %s with 0 of 3 done", st, m.Identity().Name)
	}
	b.want(m.Identity(), []string{"a", "d"}, "keywords")
	if st := b.status(); st.Total != 2 {
		t.Fatalf("status %+v after a new request, want its 2 texts", st)
	}
	b.clear()
	if st := b.status(); st.Model != "" {
		t.Fatalf("status %+v after clear, want nothing under way", st)
	}
}

// TestFastModelReleasedWhileThePrimaryServes: once a generation serving
// the primary model's vectors is published, the fast model is unloaded;
// when more new texts come than a pass embeds with the primary model, the
// pass loads the fast model again and serves its vectors, until the
// background has the primary model's.
func TestFastModelReleasedWhileThePrimaryServes(t *testing.T) {
	ws := t.TempDir()
	skills := filepath.Join(ws, "skills")
	for i := range 8 {
		writeSkill(t, skills, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("helper number %d for pdf forms", i))
	}
	primary, fast := newTinyManagerDim(t, 32), newTinyManagerDim(t, 16)
	l, s, stop := startLoader(t, ws, t.TempDir(), Config{Embedder: primary, Fast: fast, Background: true, SyncDocuments: 3})
	defer stop()
	waitReleased := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !fast.Status().Released; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the fast model is still loaded while the primary model serves (status %+v)", fast.Status())
			}
		}
	}
	if first, _ := s.current(); first.Model.Fingerprint != fast.Identity().Fingerprint {
		t.Fatalf("first generation serves %q, want the fast model", first.Model.Name)
	}
	waitServing(t, s, primary.Identity().Fingerprint)
	waitReleased()
	if st := fast.Status(); st.Degraded || st.Identity.Fingerprint == "" {
		t.Errorf("released fast model: Status %+v, want it named and not degraded", st)
	}

	for i := 8; i < 14; i++ {
		writeSkill(t, skills, fmt.Sprintf("s%02d", i), fmt.Sprintf("s%02d", i), fmt.Sprintf("new helper %d for images", i))
	}
	if _, err := l.Reindex(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	g := waitServing(t, s, fast.Identity().Fingerprint)
	if ent, ok := g.Catalog.Lookup("s13", ""); !ok || g.vectors[ent.Skill] == nil {
		t.Fatal("a new skill has no fast vector")
	}
	waitServing(t, s, primary.Identity().Fingerprint)
	waitReleased()
}
