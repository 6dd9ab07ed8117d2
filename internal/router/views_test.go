package router

import (
	"context"
	"fmt"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

func TestViewKeysSeparateCallers(t *testing.T) {
	type caller struct {
		agent string
		kinds skill.KindFilter
		scope skill.Scope
	}
	distinct := []caller{
		{},
		{agent: "a"},
		{agent: "a", kinds: skill.KindsSkills},
		{agent: "a\x00skills"},
		{agent: "a", kinds: skill.KindsSkills, scope: skill.Scope{Servers: []string{}}},
		{agent: "a", kinds: skill.KindsSkills, scope: skill.Scope{Servers: []string{""}}},
		{agent: "a", kinds: skill.KindsSkills, scope: skill.Scope{Servers: []string{"gh"}}},
		{agent: "a", kinds: skill.KindsSkills, scope: skill.Scope{Servers: []string{"gh", "fs"}}},
		{agent: "a", kinds: skill.KindsSkills, scope: skill.Scope{Servers: []string{"gh,fs"}}},
		{agent: "3:a", kinds: skill.KindsTools},
		{scope: skill.Scope{Servers: []string{}}},
	}
	seen := map[string]caller{}
	for _, c := range distinct {
		k := viewKey(c.agent, c.kinds, c.scope)
		if prev, ok := seen[k]; ok {
			t.Errorf("%+v and %+v share the key %q", prev, c, k)
		}
		seen[k] = c
	}
	if viewKey("a", skill.KindsBoth, skill.Scope{}) != viewKey("a", "", skill.Scope{}) {
		t.Error(`kinds "both" and "" see the same and should share a view`)
	}
}

// TestViewsFollowCallersAndGenerations checks that matches of callers with
// every mix of agent, kinds and scope, in turns, answer what a match asking
// their visibility afresh does, and that the views are kept per generation
// and bounded.
func TestViewsFollowCallersAndGenerations(t *testing.T) {
	r, _ := newToolRouter(t, "")
	ctx := context.Background()
	scoped := skill.WithScope(ctx, skill.Scope{Servers: []string{"fs"}})
	none := skill.WithScope(ctx, skill.Scope{Servers: []string{}})
	g, err := r.generation()
	if err != nil {
		t.Fatal(err)
	}
	tasks := []string{"page the on-call engineer", "open a new issue in the github repository", "fill in a PDF form", "review this change"}
	for round := range 2 {
		for _, c := range []context.Context{ctx, scoped, none} {
			for _, agent := range []string{"", "reviewer"} {
				for _, kinds := range []skill.KindFilter{"", skill.KindsSkills, skill.KindsTools} {
					for _, task := range tasks {
						req := skill.MatchRequest{Task: task, TopK: 10, Agent: agent, Options: skill.MatchOptions{Kinds: kinds}}
						got, err := r.Match(c, req)
						if err != nil {
							t.Fatal(err)
						}
						scope := skill.ScopeFrom(c)
						want, err := g.Index.Match(c, req, func(s *skill.Skill) bool {
							return kinds.Allows(s) && scope.Allows(s) && g.Catalog.VisibleTo(s, agent)
						})
						if err != nil {
							t.Fatal(err)
						}
						if a, b := names(got.Candidates), names(want.Candidates); fmt.Sprint(a) != fmt.Sprint(b) {
							t.Errorf("round %d, scope %v, agent %q, kinds %q, %q: %v, want %v", round, scope.Servers, agent, kinds, task, a, b)
						}
					}
				}
			}
		}
	}
	if n := len(r.views.m); n != 3*2*3 {
		t.Errorf("%d views kept for 18 kinds of caller", n)
	}

	// A match of a generation no longer served gets no view, and leaves
	// the views as they were.
	next := *g
	if r.views.get(&next, g, audience(&next, "", "", skill.Scope{})) != nil || r.views.g != g {
		t.Error("a view was made for a generation not served")
	}
	// Publishing drops the views, so they keep no old generation alive.
	kept := r.views.get(g, g, audience(g, "", "", skill.Scope{}))
	r.publish(g)
	if r.views.g != nil || r.views.m != nil {
		t.Error("the views outlive their generation's publish")
	}
	if v := r.views.get(g, g, audience(g, "", "", skill.Scope{})); v == nil || v == kept {
		t.Error("after a publish the old view was served again")
	}
	// Past maxViews kinds of caller, matches go without a view and answer
	// the same.
	for i := range maxViews + 10 {
		v := r.views.get(g, g, audience(g, fmt.Sprintf("agent-%d", i), "", skill.Scope{}))
		if (v == nil) != (i >= maxViews-1) {
			t.Fatalf("caller %d of %d: view %v", i, maxViews, v)
		}
	}
	if len(r.views.m) != maxViews {
		t.Errorf("%d views kept, want at most %d", len(r.views.m), maxViews)
	}
	req := skill.MatchRequest{Task: "page the on-call engineer", TopK: 10, Agent: "reviewer", Options: skill.MatchOptions{Kinds: skill.KindsTools}}
	got, err := r.Match(ctx, req)
	if err != nil || len(got.Candidates) == 0 || got.Candidates[0].Skill.Name != "ops.page_oncall" {
		t.Errorf("a caller past the views: %v %v", got, err)
	}
}
