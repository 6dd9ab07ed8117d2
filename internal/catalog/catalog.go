// Package catalog resolves a set of parsed skills into what callers see:
// precedence between roots, agent scope, shadowing of same-named skills, and
// a prompt-ready rendering within a character budget. It is pure: it reads
// no files, and a Catalog never changes once built.
package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillmd"
)

// Catalog is an immutable snapshot of the skills on disk, resolved for
// precedence and agent scope. A new generation replaces it as a whole.
type Catalog struct {
	Generation uint64
	BuiltAt    time.Time
	Precedence []skill.SourceKind

	// Files is the number of SKILL.md files found; Invalid how many of
	// them have never parsed (skipped).
	Files, Invalid int
	// Problems lists every problem of every file and registry, sorted.
	Problems []skill.Problem

	entries []*skill.Entry
	facts   map[*skill.Skill]*skillFacts       // what VisibleTo needs of each skill, computed once
	global  map[string]*skill.Entry            // folded name -> winner among global roots
	scoped  map[string]map[string]*skill.Entry // agent -> folded name -> winner among its roots
	shadows []skill.Shadow
	agents  []string
	tools   map[string]*skill.Skill // tools of MCP servers by entry name
	toolSeq []*skill.Skill          // the same, sorted by name

	countOnce sync.Once
	counts    Counts
}

// Input is what New builds from.
type Input struct {
	Generation uint64
	Precedence []skill.SourceKind
	Skills     []*skill.Skill
	Files      int
	Invalid    int
	Problems   []skill.Problem
	// Tools are the tools of connected MCP servers (entries of kind tool,
	// names unique). They take no part in precedence: a tool is visible to
	// the agents its server allows, and Lookup never returns one.
	Tools []*skill.Skill
}

// New resolves precedence. Within one scope (global, or one agent's
// roots) the copy from the root whose kind ranks first in Precedence wins;
// between roots of one kind the earlier configured root wins; within one root
// the lexically first path wins. For an agent, its own skills then hide global
// ones of the same name. Names collide when equal after FoldName. A disabled
// skill still wins its name: disabling a copy never surfaces another one.
func New(in Input) *Catalog {
	prec := in.Precedence
	if len(prec) == 0 {
		prec = skill.DefaultPrecedence
	}
	c := &Catalog{
		Generation: in.Generation,
		BuiltAt:    time.Now(),
		Precedence: prec,
		Files:      in.Files,
		Invalid:    in.Invalid,
		Problems:   append([]skill.Problem(nil), in.Problems...),
		facts:      make(map[*skill.Skill]*skillFacts, len(in.Skills)),
		scoped:     make(map[string]map[string]*skill.Entry),
		tools:      make(map[string]*skill.Skill, len(in.Tools)),
	}
	c.order(in.Skills, precedence(prec))
	c.resolve(precedence(prec))
	c.addTools(in.Tools)
	sort.Slice(c.toolSeq, func(i, j int) bool { return c.toolSeq[i].Name < c.toolSeq[j].Name })
	skill.SortProblems(c.Problems)
	sort.SliceStable(c.shadows, func(i, j int) bool {
		if c.shadows[i].Agent != c.shadows[j].Agent {
			return c.shadows[i].Agent < c.shadows[j].Agent
		}
		return c.shadows[i].Name < c.shadows[j].Name
	})
	return c
}

// precedence ranks the kinds of roots, first first.
type precedence []skill.SourceKind

// rank returns the position of k, after all of them when k is not listed.
func (p precedence) rank(k skill.SourceKind) int {
	if i := slices.Index(p, k); i >= 0 {
		return i
	}
	return len(p)
}

// order makes the entries of skills and their facts, sorts the entries by
// precedence, then root, then path, and numbers their roots (Rank).
func (c *Catalog) order(skills []*skill.Skill, prec precedence) {
	// One allocation each for the entries and their facts, not one per
	// skill: a catalog is made at every generation, of up to 100,000s.
	entries, facts := make([]skill.Entry, len(skills)), make([]skillFacts, len(skills))
	c.entries = make([]*skill.Entry, len(skills))
	globals := 0
	for i, s := range skills {
		entries[i].Skill = s
		c.entries[i] = &entries[i]
		facts[i].key = skillmd.FoldName(s.Name)
		c.facts[s] = &facts[i]
		if s.Root.Agent == "" {
			globals++
		}
	}
	c.global = make(map[string]*skill.Entry, globals)
	slices.SortStableFunc(c.entries, func(ea, eb *skill.Entry) int {
		a, b := ea.Skill, eb.Skill
		return cmp.Or(cmp.Compare(prec.rank(a.Root.Kind), prec.rank(b.Root.Kind)),
			cmp.Compare(a.Root.Order, b.Root.Order), strings.Compare(a.RelPath, b.RelPath))
	})
	// Rank is the position of the root among the distinct roots in order.
	rank, lastRoot := 0, ""
	for _, e := range c.entries {
		if e.Skill.Root.Path != lastRoot {
			rank++
			lastRoot = e.Skill.Root.Path
		}
		e.Rank = rank
	}
}

// resolve picks the winner of each name in each scope from the ordered
// entries, and records every shadow, an agent's own skills over global ones
// included.
func (c *Catalog) resolve(prec precedence) {
	for _, e := range c.entries {
		key := c.facts[e.Skill].key
		scope := c.global
		if a := e.Skill.Root.Agent; a != "" {
			if c.scoped[a] == nil {
				c.scoped[a] = make(map[string]*skill.Entry)
			}
			scope = c.scoped[a]
		}
		if w, ok := scope[key]; ok {
			e.ShadowedBy = w
			w.Shadows = append(w.Shadows, e)
			c.shadows = append(c.shadows, skill.Shadow{
				Name: e.Skill.Name, Winner: w.Skill, Loser: e.Skill, Agent: e.Skill.Root.Agent,
				Reason: shadowReason(w.Skill, e.Skill, prec),
			})
			continue
		}
		scope[key] = e
	}
	for _, e := range c.global {
		c.facts[e.Skill].global = true
	}
	for agent, skills := range c.scoped {
		c.agents = append(c.agents, agent)
		for key, e := range skills {
			if g, ok := c.global[key]; ok {
				c.shadows = append(c.shadows, skill.Shadow{
					Name: e.Skill.Name, Winner: e.Skill, Loser: g.Skill, Agent: agent,
					Reason: fmt.Sprintf("agent %s's own skill overrides the global one for that agent", agent),
				})
			}
		}
	}
	sort.Strings(c.agents)
}

// addTools adds the tools of MCP servers, the first of a name only, with a
// warning for each that has the name of a skill.
func (c *Catalog) addTools(tools []*skill.Skill) {
	for _, t := range tools {
		if t == nil || !t.IsTool() || c.tools[t.Name] != nil {
			continue
		}
		c.tools[t.Name] = t
		c.toolSeq = append(c.toolSeq, t)
		if _, clash := c.lookupAny(skillmd.FoldName(t.Name)); clash {
			c.Problems = append(c.Problems, skill.Problem{
				Severity: skill.SeverityWarning, Code: "tool-name-clash", File: "mcp_servers." + t.Tool.Server,
				Message: fmt.Sprintf("tool %s has the name of a skill: Get and Load return the skill, CallTool calls the tool", t.Name),
			})
		}
	}
}

func shadowReason(w, l *skill.Skill, prec precedence) string {
	switch {
	case prec.rank(w.Root.Kind) != prec.rank(l.Root.Kind):
		return fmt.Sprintf("%s ranks above %s", w.Root.Kind, l.Root.Kind)
	case w.Root.Path != l.Root.Path:
		return fmt.Sprintf("root %s is configured before root %s", w.Root.Display, l.Root.Display)
	default:
		return fmt.Sprintf("same root: %s sorts before %s", w.RelPath, l.RelPath)
	}
}

// Lookup finds the copy of a skill that agent sees: the agent's own skill
// when it has one, else the global winner. The name is matched after
// FoldName.
func (c *Catalog) Lookup(name, agent string) (*skill.Entry, bool) {
	return c.lookupKey(skillmd.FoldName(name), agent)
}

func (c *Catalog) lookupKey(key, agent string) (*skill.Entry, bool) {
	if agent != "" {
		if e, ok := c.scoped[agent][key]; ok {
			return e, true
		}
	}
	e, ok := c.global[key]
	return e, ok
}

// lookupAny reports whether any scope has a skill under key.
func (c *Catalog) lookupAny(key string) (*skill.Entry, bool) {
	if e, ok := c.global[key]; ok {
		return e, true
	}
	for _, scope := range c.scoped {
		if e, ok := scope[key]; ok {
			return e, true
		}
	}
	return nil, false
}

// Visible returns the skills and tools agent sees, sorted by name: global
// winners not hidden by the agent's own skills, the agent's own winners,
// and the tools of the servers the agent sees. It includes disabled and
// hidden skills; callers filter for their purpose.
func (c *Catalog) Visible(agent string) []*skill.Skill {
	out := make([]*skill.Skill, 0, len(c.global)+len(c.scoped[agent])+len(c.toolSeq))
	c.eachVisible(agent, func(s *skill.Skill) { out = append(out, s) })
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// eachVisible calls f with each skill and tool agent sees, in no order.
func (c *Catalog) eachVisible(agent string, f func(*skill.Skill)) {
	own := c.scoped[agent]
	for key, e := range c.global {
		if _, hidden := own[key]; !hidden {
			f(e.Skill)
		}
	}
	for _, e := range own {
		f(e.Skill)
	}
	for _, t := range c.toolSeq {
		if t.Tool.SeenBy(agent) {
			f(t)
		}
	}
}

// Counts is what a catalog holds, by state, as the router's status reports
// it.
type Counts struct {
	// Skills, Disabled and Hidden count the skills a caller without an
	// agent sees: served, disabled in a registry, and hidden from listings.
	// Tools counts the tools of MCP servers such a caller sees.
	Skills, Disabled, Hidden, Tools int
	// AgentScoped counts the winning copies from agents' own roots.
	AgentScoped int
	// Errors and Warnings count the problems of every file and registry,
	// ProblemsByCode the same by problem code.
	Errors, Warnings int
	ProblemsByCode   map[string]int
}

// Counts returns the catalog's counts. They are worked out once, at the
// first call: a catalog never changes, and status is polled (metrics
// collections, remote MCP fronts). The map is shared; do not modify it.
func (c *Catalog) Counts() Counts {
	c.countOnce.Do(func() { c.counts = c.count() })
	return c.counts
}

func (c *Catalog) count() Counts {
	var n Counts
	c.eachVisible("", func(s *skill.Skill) {
		switch {
		case s.IsTool():
			n.Tools++
		case !s.Enabled():
			n.Disabled++
		case s.Frontmatter.Hidden:
			n.Hidden++
		default:
			n.Skills++
		}
	})
	for _, e := range c.entries {
		if e.Skill.Root.Agent != "" && e.ShadowedBy == nil {
			n.AgentScoped++
		}
	}
	n.ProblemsByCode, n.Errors, n.Warnings = skill.TallyProblems(c.Problems)
	return n
}

// VisibleTo reports whether agent sees s (a winning skill, or a tool of a
// server the agent sees). Match calls it for every candidate, so it reads
// what New worked out: a task without an agent costs one lookup.
func (c *Catalog) VisibleTo(s *skill.Skill, agent string) bool {
	if s.IsTool() {
		return c.tools[s.Name] == s && s.Tool.SeenBy(agent)
	}
	f, ok := c.facts[s]
	if !ok {
		return false // not a skill of this catalog
	}
	if agent != "" {
		if e, ok := c.scoped[agent][f.key]; ok {
			return e.Skill == s
		}
	}
	return f.global
}

// skillFacts is what the catalog knows of one of its skills.
type skillFacts struct {
	key    string // the folded name
	global bool   // the winner of its name among the global roots
}

// Entry finds what agent may load under name: the skill it sees (Lookup),
// else the tool of that entry name (Tool) when scope includes its server.
// A skill wins over a tool of the same name.
func (c *Catalog) Entry(name, agent string, scope skill.Scope) (*skill.Entry, bool) {
	t, isTool := c.Tool(name, agent)
	if e, ok := c.Lookup(name, agent); ok {
		return e, true
	}
	if isTool && scope.Allows(t) {
		return &skill.Entry{Skill: t}, true
	}
	return nil, false
}

// Tool finds a tool by its entry name ("server.tool", exactly) when agent
// sees its server.
func (c *Catalog) Tool(name, agent string) (*skill.Skill, bool) {
	t, ok := c.tools[name]
	if !ok || !t.Tool.SeenBy(agent) {
		return nil, false
	}
	return t, true
}

// Tools returns every tool, sorted by name.
func (c *Catalog) Tools() []*skill.Skill { return c.toolSeq }

// Winners returns every skill that wins its name in some scope (the global
// winners and every agent's own winners), then every tool. Matching
// indexes these.
func (c *Catalog) Winners() []*skill.Skill {
	out := make([]*skill.Skill, 0, len(c.entries)+len(c.toolSeq))
	for _, e := range c.entries {
		if e.ShadowedBy == nil {
			out = append(out, e.Skill)
		}
	}
	return append(out, c.toolSeq...)
}

// Shadowed returns the collisions agent is affected by: every global one, and
// the agent's own ("" means global only). With agent "*" it returns all.
func (c *Catalog) Shadowed(agent string) []skill.Shadow {
	var out []skill.Shadow
	for _, s := range c.shadows {
		if s.Agent == "" || agent == "*" || s.Agent == agent {
			out = append(out, s)
		}
	}
	return out
}

// Agents returns the agents that have their own skill roots.
func (c *Catalog) Agents() []string { return c.agents }

// KnownAgent reports whether agent has its own skills.
func (c *Catalog) KnownAgent(agent string) bool {
	_, ok := c.scoped[agent]
	return ok
}

// Entries returns every valid copy in precedence order.
func (c *Catalog) Entries() []*skill.Entry { return c.entries }
