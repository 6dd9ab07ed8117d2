package router

import (
	"context"
	"strconv"
	"sync"

	"github.com/mcpsag/router/internal/match"
	"github.com/mcpsag/router/internal/skill"
)

// Match ranks the skills the agent sees against the task, or abstains. With
// feature flag skills_v1 off it abstains with reason "disabled"; that is an
// answer, not an error. The request is validated once, by the index (with
// its limits), or here when the flag is off.
func (r *Router) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	g, err := r.generation()
	if err != nil {
		return nil, err
	}
	if !r.Settings().Flags.SkillsV1 {
		if err := req.Validate(g.Index.Limits()); err != nil {
			return nil, err
		}
		const why = "routing is switched off (feature flag skills_v1); load skills by name, or ask an operator to turn it on"
		return &skill.MatchResult{
			Verdict: skill.VerdictNoSkill, VerdictDetail: why, Abstained: true, AbstainReason: skill.AbstainDisabled,
			AbstainDetail: why, Generation: g.ID, GenerationID: g.ContentID,
		}, nil
	}
	aud := audience(g, req.Agent, req.Options.Kinds, skill.ScopeFrom(ctx))
	var res skill.MatchResult
	if view := r.views.get(g, r.current.Load(), aud); view != nil {
		res, err = g.Index.MatchView(ctx, req, view)
	} else {
		res, err = g.Index.Match(ctx, req, aud.Visible)
	}
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// maxViews bounds the views kept for one generation: callers with more
// distinct agents, kind filters and scopes than that are matched without
// one, which answers the same, only slower.
const maxViews = 64

// views keeps the served generation's match views, one per kind of caller:
// a caller's agent, kind filter and scope decide which skills it sees.
type views struct {
	mu sync.Mutex
	g  *Generation // the generation of m
	m  map[string]*match.View
}

// get returns the view of g for the audience aud, made the first time, or
// nil when g is not current (a match that began before the last publish:
// the views hold only the served generation, so that an old one is not
// kept alive by them) or maxViews views are kept already.
func (v *views) get(g, current *Generation, aud match.Audience) *match.View {
	v.mu.Lock()
	defer v.mu.Unlock()
	if g != current {
		return nil
	}
	if v.g != g {
		v.g, v.m = g, map[string]*match.View{}
	}
	key := viewKey(aud.Agent, aud.Kinds, aud.Scope)
	if view, ok := v.m[key]; ok {
		return view
	}
	if len(v.m) >= maxViews {
		return nil
	}
	view := g.Index.View(aud)
	v.m[key] = view
	return view
}

// audience is who a match of g is for: a caller with agent, kinds and
// scope, who sees the skills of g's catalog that agent sees.
func audience(g *Generation, agent string, kinds skill.KindFilter, scope skill.Scope) match.Audience {
	return match.Audience{Agent: agent, Kinds: kinds, Scope: scope, VisibleTo: g.Catalog.VisibleTo}
}

// forget drops the views of the generation publish just replaced.
func (v *views) forget() {
	v.mu.Lock()
	v.g, v.m = nil, nil
	v.mu.Unlock()
}

// viewKey names what a caller sees: equal keys, equal visibility. Each
// part is written with its length, so no two callers share a key.
func viewKey(agent string, kinds skill.KindFilter, scope skill.Scope) string {
	if kinds != skill.KindsSkills && kinds != skill.KindsTools {
		kinds = "" // both, however it was said
	}
	if agent == "" && kinds == "" && scope.Servers == nil {
		return ""
	}
	b := make([]byte, 0, 64)
	part := func(s string) { b = append(strconv.AppendInt(b, int64(len(s)), 10), ':'); b = append(b, s...) }
	part(agent)
	part(string(kinds))
	if scope.Servers != nil {
		b = strconv.AppendInt(append(b, 's'), int64(len(scope.Servers)), 10)
		for _, s := range scope.Servers {
			part(s)
		}
	}
	return string(b)
}
