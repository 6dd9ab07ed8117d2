package engine

import (
	"context"

	"github.com/mcpsag/router/internal/skill"
)

// MatchRequest asks which skills fit a task.
type MatchRequest struct {
	Task          string
	TopK          int
	Agent         string
	Mode          skill.MatchMode
	Fusion        skill.Fusion
	Threshold     *float64
	IncludeHidden bool
}

// Match ranks the skills the agent sees against the task. With feature flag
// skills_v1 off it abstains with reason "disabled"; that is an answer, not an
// error.
func (e *Engine) Match(ctx context.Context, req MatchRequest) (*skill.MatchResult, error) {
	cat, err := e.Catalog()
	if err != nil {
		return nil, err
	}
	if !e.Settings().Flags.SkillsV1 {
		return &skill.MatchResult{
			Abstained: true, AbstainReason: skill.AbstainDisabled, Generation: cat.Generation,
			AbstainDetail: "routing is switched off (feature flag skills_v1); load skills by name, or ask an operator to turn it on",
		}, nil
	}
	return nil, errNotBuilt("Match")
}
