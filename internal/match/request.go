package match

import (
	"strings"

	"github.com/mcpsag/router/internal/skill"
)

// Visibility reports whether the caller may see a skill. The router passes
// the catalog's rule (agent scope and shadowing). When nil, a skill is
// visible when it is global or scoped to the request's agent; an unknown
// agent therefore sees the global skills only.
type Visibility func(*skill.Skill) bool

// resolved is a validated request with defaults applied.
type resolved struct {
	task      string // control characters replaced, ready for analysis
	raw       string // the task with control characters replaced, for the embedder
	topK      int
	mode      skill.MatchMode
	fusion    skill.Fusion
	threshold *float64
	hidden    bool
	visible   Visibility
	// noun names what the request asks for in the verdict's words:
	// "tool" for tools alone, else "skill".
	noun string
	// noneVisible is the reason to abstain with when nothing the request
	// asks for is visible.
	noneVisible skill.AbstainReason
}

// Limits returns the request limits of the index's configuration.
func (ix *Index) Limits() skill.MatchLimits { return limits(ix.cfg) }

func limits(cfg Config) skill.MatchLimits {
	return skill.MatchLimits{MaxTaskBytes: cfg.MaxTaskBytes, MaxTopK: cfg.MaxTopK}
}

// resolve validates req (skill.MatchRequest.Validate: the one validation of
// a match) and applies the defaults of cfg.
func resolve(req skill.MatchRequest, visible Visibility, cfg Config) (resolved, error) {
	if err := req.Validate(limits(cfg)); err != nil {
		return resolved{}, err
	}
	o := req.Options
	r := resolved{topK: req.TopK, mode: o.Mode, fusion: o.Fusion, hidden: o.IncludeHidden, visible: visible}
	r.noun, r.noneVisible = o.Kinds.Noun(), o.Kinds.NoneVisible()
	if r.topK == 0 {
		r.topK = cfg.TopK
	}
	if r.mode == "" {
		r.mode = cfg.Mode
	}
	if r.fusion == "" {
		r.fusion = cfg.Fusion.Rule
	}
	if t := o.Threshold; t != nil {
		v := *t
		r.threshold = &v
	}
	r.raw = strings.Map(skill.ControlToSpace, req.Task)
	r.task = normalizeText(r.raw)
	if r.visible == nil {
		agent := req.Agent
		r.visible = func(s *skill.Skill) bool { return s.Root.Agent == "" || s.Root.Agent == agent }
	}
	return r, nil
}
