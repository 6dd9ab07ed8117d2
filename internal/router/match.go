package router

import (
	"context"

	"github.com/mcpsag/router/internal/skill"
)

// Match ranks the skills the agent sees against the task, or abstains. With
// feature flag skills_v1 off it abstains with reason "disabled"; that is an
// answer, not an error.
func (r *Router) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	g, err := r.generation()
	if err != nil {
		return nil, err
	}
	if err := req.Validate(g.Index.Limits()); err != nil {
		return nil, err
	}
	if !r.Settings().Flags.SkillsV1 {
		return &skill.MatchResult{
			Abstained: true, AbstainReason: skill.AbstainDisabled, Generation: g.ID, GenerationID: g.ContentID,
			AbstainDetail: "routing is switched off (feature flag skills_v1); load skills by name, or ask an operator to turn it on",
		}, nil
	}
	kinds, scope := req.Options.Kinds, skill.ScopeFrom(ctx)
	visible := func(s *skill.Skill) bool {
		return kinds.Allows(s) && scope.Allows(s) && g.Catalog.VisibleTo(s, req.Agent)
	}
	res, err := g.Index.Match(ctx, req, visible)
	if err != nil {
		return nil, err
	}
	return &res, nil
}
