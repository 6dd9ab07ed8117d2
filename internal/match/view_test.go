package match

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/slowtest"
)

// TestViewRemembersVisibility checks that matches through a View rank
// exactly as matches asking visible each time, that the View asks visible
// at most once per skill however many matches (and goroutines) use it, and
// that a View of another index is used as its visible function alone.
func TestViewRemembersVisibility(t *testing.T) {
	slowtest.Skip(t, "26 s under -race")
	skills, vecs, bodies := exactCorpus(t, 1500, 48, 3)
	r := rand.New(rand.NewPCG(5, 5))
	z := rand.NewZipf(r, 1.1, 2, 20000)
	tasks, qv := zipfTasks(r, z, skills, 40, 48, func(int) int { return 3 + r.IntN(12) })
	build := func(skills []*skill.Skill) *Index {
		ix, err := Build(context.Background(), BuildInput{
			Skills: skills, Vectors: vecs[:len(skills)], Embedder: fakeQuery{vecs: qv}, Config: DefaultConfig(),
			Body: func(s *skill.Skill) (string, error) { return bodies[s.ContentHash], nil },
		})
		if err != nil {
			t.Fatal(err)
		}
		return ix
	}
	ix := build(skills)

	// The reviewer's view: its own skills and the global ones, less every
	// third skill whose name has an "s1" (an arbitrary rule, as a catalog's
	// scoping can be).
	var mu sync.Mutex
	asked := map[*skill.Skill]int{}
	visible := func(s *skill.Skill) bool {
		mu.Lock()
		asked[s]++
		mu.Unlock()
		return (s.Root.Agent == "" || s.Root.Agent == "reviewer") && !(strings.Contains(s.Name, "s1") && len(s.Name)%3 == 0)
	}
	plain := func(s *skill.Skill) bool {
		return (s.Root.Agent == "" || s.Root.Agent == "reviewer") && !(strings.Contains(s.Name, "s1") && len(s.Name)%3 == 0)
	}
	view := ix.View(Audience{VisibleTo: func(s *skill.Skill, _ string) bool { return visible(s) }})
	ctx := context.Background()
	for round := range 2 {
		for i, task := range tasks {
			for _, mode := range []skill.MatchMode{skill.ModeHybrid, skill.ModeKeyword, skill.ModeDense} {
				req := skill.MatchRequest{Task: task, TopK: 5, Options: skill.MatchOptions{Mode: mode, IncludeHidden: i%2 == 0}}
				want, err := ix.Rank(ctx, req, plain)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ix.rank(ctx, req, visible, view)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := exactRendering(want), exactRendering(got); a != b {
					t.Fatalf("round %d, %s task %d: through the view\n%s\nasking each time\n%s", round, mode, i, b, a)
				}
			}
		}
	}
	if len(asked) == 0 {
		t.Fatal("the view never asked visible")
	}
	for s, n := range asked {
		if n > 1 {
			t.Fatalf("visible was asked %d times for %s", n, s.Name)
		}
	}
	firstAsked := len(asked)

	// Concurrent matches through the view ask nothing more and answer the same.
	var wg sync.WaitGroup
	var diffs atomic.Int32
	for w := range 4 {
		wg.Go(func() {
			for i, task := range tasks {
				req := skill.MatchRequest{Task: task, TopK: 5, Options: skill.MatchOptions{IncludeHidden: i%2 == 0}}
				want, err1 := ix.Match(ctx, req, plain)
				got, err2 := ix.MatchView(ctx, req, view)
				if err1 != nil || err2 != nil || fmt.Sprint(want.Candidates) != fmt.Sprint(got.Candidates) {
					diffs.Add(1)
					t.Errorf("worker %d task %d: %v %v", w, i, err1, err2)
				}
			}
		})
	}
	wg.Wait()
	if diffs.Load() == 0 && len(asked) != firstAsked {
		t.Errorf("concurrent matches asked for %d more skills; every answer they needed was known", len(asked)-firstAsked)
	}

	// A view of another index (the same skills but the last hundred) is
	// only a visible function: its answers are by slot, and the slots of
	// one index are not the other's.
	other := build(skills[:len(skills)-100])
	foreign := other.View(Audience{VisibleTo: func(s *skill.Skill, _ string) bool { return plain(s) }})
	for i, task := range tasks {
		req := skill.MatchRequest{Task: task, TopK: 5}
		want, err := ix.Match(ctx, req, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.MatchView(ctx, req, foreign)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(want.Candidates) != fmt.Sprint(got.Candidates) {
			t.Fatalf("task %d: a foreign view changed the answer:\n%v\n%v", i, got.Candidates, want.Candidates)
		}
	}
}

// TestAudienceVisible: an audience sees what its kind filter, its scope
// and the catalog's answer for its agent all allow, and the catalog is
// asked for its own agent.
func TestAudienceVisible(t *testing.T) {
	sk := &skill.Skill{Name: "forms"}
	tool := &skill.Skill{Name: "fs.read", Kind: skill.EntryTool, Tool: &skill.Tool{Server: "fs"}}
	var askedFor []string
	only := func(names ...string) func(*skill.Skill, string) bool {
		return func(s *skill.Skill, agent string) bool {
			askedFor = append(askedFor, agent)
			return slices.Contains(names, s.Name)
		}
	}
	cases := []struct {
		name string
		a    Audience
		s    *skill.Skill
		want bool
	}{
		{"everyone sees a skill", Audience{}, sk, true},
		{"the catalog hides it", Audience{Agent: "a", VisibleTo: only("other")}, sk, false},
		{"the catalog shows it", Audience{Agent: "a", VisibleTo: only("forms")}, sk, true},
		{"tools only", Audience{Kinds: skill.KindsTools, VisibleTo: only("forms")}, sk, false},
		{"skills only, a tool", Audience{Kinds: skill.KindsSkills}, tool, false},
		{"a scope without its server", Audience{Scope: skill.Scope{Servers: []string{"web"}}}, tool, false},
		{"a scope with its server", Audience{Scope: skill.Scope{Servers: []string{"fs"}}, VisibleTo: only("fs.read")}, tool, true},
	}
	for _, c := range cases {
		askedFor = nil
		if got := c.a.Visible(c.s); got != c.want {
			t.Errorf("%s: Visible = %v, want %v", c.name, got, c.want)
		}
		for _, agent := range askedFor {
			if agent != c.a.Agent {
				t.Errorf("%s: the catalog was asked for agent %q, want %q", c.name, agent, c.a.Agent)
			}
		}
	}
}
