package catalog

import (
	"fmt"
	"testing"

	"github.com/mcpsag/router/internal/skill"
)

// TestVisibleToAgreesWithLookup builds a catalog with global skills, two
// global roots that shadow each other, and agents whose own skills override
// global ones or stand alone, and checks VisibleTo against its definition:
// an agent sees s exactly when Lookup of s's name for that agent returns s.
func TestVisibleToAgreesWithLookup(t *testing.T) {
	first := skill.Root{Path: "/w/skills", Kind: skill.KindProject, Order: 0}
	second := skill.Root{Path: "/w/more", Kind: skill.KindProject, Order: 1}
	alice := skill.Root{Path: "/w/agents/alice/skills", Kind: skill.KindProject, Agent: "alice", Order: 2}
	bob := skill.Root{Path: "/w/agents/bob/skills", Kind: skill.KindProject, Agent: "bob", Order: 3}
	var skills []*skill.Skill
	add := func(root skill.Root, name string) {
		skills = append(skills, &skill.Skill{Name: name, Root: root, RelPath: name + "/SKILL.md"})
	}
	for i := range 6 {
		add(first, fmt.Sprintf("s%d", i))
	}
	add(second, "s0")     // shadowed by the first root's
	add(second, "S1")     // the same name folded: shadowed
	add(second, "only-2") // global, from the second root
	add(alice, "s2")      // overrides the global s2 for alice
	add(alice, "alice-only")
	add(bob, "s3")
	add(bob, "alice-only") // bob's own, unrelated to alice's
	c := New(Input{Skills: skills})
	stranger := &skill.Skill{Name: "s4", Root: first}

	seen := 0
	for _, agent := range []string{"", "alice", "bob", "carol"} {
		for _, s := range skills {
			e, ok := c.Lookup(s.Name, agent)
			want := ok && e.Skill == s
			if got := c.VisibleTo(s, agent); got != want {
				t.Errorf("VisibleTo(%s from %s, agent %q) = %v, Lookup says %v", s.Name, s.Root.Path, agent, got, want)
			}
			if want {
				seen++
			}
		}
		if c.VisibleTo(stranger, agent) {
			t.Errorf("agent %q sees a skill that is not in the catalog", agent)
		}
	}
	// "" and carol see the 7 global winners; alice and bob 8 each.
	if seen != 7+8+8+7 {
		t.Errorf("%d visible (skill, agent) pairs, want 30", seen)
	}
}

// TestEntry: Entry finds the skill an agent sees under a name (folded),
// else a tool of that exact name whose server the agent sees and the
// caller's scope includes; a skill wins over a tool of its name.
func TestEntry(t *testing.T) {
	root := skill.Root{Path: "/w/skills", Kind: skill.KindProject}
	pdf := &skill.Skill{Name: "pdf", Root: root, RelPath: "pdf/SKILL.md"}
	dotted := &skill.Skill{Name: "gh.merge", Root: root, RelPath: "gh.merge/SKILL.md"}
	tool := func(server, name string, agents ...string) *skill.Skill {
		return &skill.Skill{Name: server + "." + name, Kind: skill.EntryTool, Tool: &skill.Tool{Server: server, Name: name, Agents: agents}}
	}
	issue, merge, deploy := tool("gh", "issue"), tool("gh", "merge"), tool("ops", "deploy", "alice")
	c := New(Input{Skills: []*skill.Skill{pdf, dotted}, Tools: []*skill.Skill{issue, merge, deploy}})
	all, ghOnly := skill.Scope{}, skill.Scope{Servers: []string{"gh"}}
	for _, tc := range []struct {
		name, agent string
		scope       skill.Scope
		want        *skill.Skill
	}{
		{"PDF", "", all, pdf},
		{"gh.issue", "", all, issue},
		{"gh.issue", "", ghOnly, issue},
		{"gh.merge", "", all, dotted}, // the skill wins
		{"ops.deploy", "alice", all, deploy},
		{"ops.deploy", "alice", ghOnly, nil}, // out of the caller's scope
		{"ops.deploy", "bob", all, nil},      // bob does not see ops
		{"GH.ISSUE", "", all, nil},           // tool names are exact
		{"missing", "", all, nil},
	} {
		e, ok := c.Entry(tc.name, tc.agent, tc.scope)
		switch {
		case tc.want == nil && ok:
			t.Errorf("Entry(%q, %q, %v) = %s, want none", tc.name, tc.agent, tc.scope.Servers, e.Skill.Name)
		case tc.want != nil && (!ok || e.Skill != tc.want):
			t.Errorf("Entry(%q, %q, %v) = %v, %v; want %s", tc.name, tc.agent, tc.scope.Servers, e, ok, tc.want.Name)
		}
	}
}
