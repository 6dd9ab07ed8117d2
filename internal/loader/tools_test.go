package loader

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/mcpsag/router/internal/embed"
	"github.com/mcpsag/router/internal/skill"
)

// toolSource is a fixed list of tools, settled or not.
type toolSource struct {
	mu      sync.Mutex
	tools   []*skill.Skill
	settled bool
}

func (s *toolSource) Tools() ([]*skill.Skill, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := ""
	for _, t := range s.tools {
		d += t.Name + t.ContentHash
	}
	return s.tools, d
}

func (s *toolSource) Settled() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.settled
}

func (s *toolSource) Changes() <-chan struct{} { return nil }

func (s *toolSource) Wait(context.Context) error { return nil }

func (s *toolSource) set(settled bool, tools ...*skill.Skill) {
	s.mu.Lock()
	s.tools, s.settled = tools, settled
	s.mu.Unlock()
}

func toolEntry(name, desc string) *skill.Skill {
	return &skill.Skill{Name: "srv." + name, Kind: skill.EntryTool, ContentHash: skill.Hash([]byte(name + desc)),
		Frontmatter: skill.Frontmatter{Description: desc}, Root: skill.Root{Kind: skill.KindServer, Display: "srv"},
		Tool: &skill.Tool{Server: "srv", Name: name, InputSchema: json.RawMessage(`{"type":"object"}`),
			Params: []skill.ToolParam{{Name: "repo", Description: "the repository"}}}}
}

// TestToolsEmbeddedOnce: tools are embedded through the vector cache; a
// server whose tools go away while it is not settled (starting, failing)
// gets them back without embedding again; once settled, unused vectors go.
func TestToolsEmbeddedOnce(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	modelDir := filepath.Join(filepath.Dir(file), "..", "..", "models", "mcpsag-static-v1")
	ctx := context.Background()
	m := embed.NewManager(embed.Config{Dir: modelDir}, nil, nil)
	t.Cleanup(func() { m.Close() })
	if err := m.Reload(ctx, embed.Config{Dir: modelDir}); err != nil {
		t.Fatalf("the committed model does not load: %v", err)
	}
	ws := t.TempDir()
	writeSkill(t, filepath.Join(ws, "skills"), "pdf", "pdf", "Fill PDF forms")
	src := &toolSource{}
	a, b := toolEntry("create_issue", "Create an issue"), toolEntry("merge", "Merge a pull request")
	src.set(true, a, b)
	ti := newTestIndex(t, ws, Config{Embedder: m, Tools: src})
	cat, st := ti.reindex(false)
	if st.Embedded != 3 || len(cat.Tools()) != 2 || ti.prev.Index.Len() != 3 {
		t.Fatalf("first build: embedded %d, %d tools, %d indexed", st.Embedded, len(cat.Tools()), ti.prev.Index.Len())
	}
	if _, ok := cat.Tool("srv.merge", ""); !ok {
		t.Fatal("tool not in the catalog")
	}
	res, err := ti.prev.Index.Match(ctx, skill.MatchRequest{Task: "merge the pull request", Options: skill.MatchOptions{Kinds: skill.KindsTools}},
		func(s *skill.Skill) bool { return s.IsTool() })
	if err != nil || len(res.Candidates) == 0 || res.Candidates[0].Skill.Name != "srv.merge" {
		t.Fatalf("match: %+v %v", res, err)
	}

	// The server of b is failing while a skill changes: the build embeds
	// the skill, and keeps b's vector.
	src.set(false, a)
	writeSkill(t, filepath.Join(ws, "skills"), "pdf", "pdf", "Fill PDF forms from JSON")
	if _, st := ti.reindex(false); st.Embedded != 1 || !st.Published {
		t.Errorf("an edit while a server fails: embedded %d, published %v", st.Embedded, st.Published)
	}
	src.set(true, a, b) // back
	if _, st := ti.reindex(false); st.Embedded != 0 {
		t.Errorf("a tool that came back was embedded again (%d)", st.Embedded)
	}
	// Settled without b: the next build that embeds prunes b's vector
	// (after the index snapshot is written).
	src.set(true, a)
	writeSkill(t, filepath.Join(ws, "skills"), "pdf", "pdf", "Fill PDF forms from JSON data")
	ti.reindex(false)
	ti.l.Flush()
	src.set(true, a, b)
	if _, st := ti.reindex(false); st.Embedded != 1 {
		t.Errorf("after a settled build without it, b embedded %d times; want 1", st.Embedded)
	}
	ti.restart()
	if _, st := ti.reindex(false); st.Embedded != 0 {
		t.Errorf("a restart with unchanged tools embedded %d", st.Embedded)
	}
}
