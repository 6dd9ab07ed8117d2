package match

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
)

// Request is one task to match.
type Request struct {
	// Task is the text to route: UTF-8, not blank, at most
	// Config.MaxTaskBytes bytes. Control characters are read as spaces.
	Task string
	// TopK is the most candidates to return: 0 means Config.TopK; more
	// than Config.MaxTopK or negative is invalid.
	TopK int
	// Agent is the calling agent, for explanations and for the default
	// visibility rule; see Visible.
	Agent string
	// Mode is hybrid, dense or bm25; empty means Config.Mode.
	Mode skill.MatchMode
	// Fusion is tiebreak, rrf, convex or adaptive; empty means
	// Config.Fusion.Rule.
	Fusion skill.Fusion
	// Threshold, when set, replaces both the model's threshold and the
	// calibrated classifier for this request: the best visible cosine
	// must reach it (in keyword-only matching, the best BM25 score).
	Threshold *float64
	// IncludeHidden also matches skills marked hidden: true.
	IncludeHidden bool
	// Visible reports whether the caller may see a skill. The daemon
	// passes the catalog's rule (agent scope and shadowing). When nil, a
	// skill is visible when it is global or scoped to Agent; an unknown
	// agent therefore sees the global skills only.
	Visible func(*skill.Skill) bool
}

// Request fields named in validation errors.
const (
	FieldTask      = "task"
	FieldTopK      = "top_k"
	FieldMode      = "mode"
	FieldFusion    = "fusion"
	FieldThreshold = "threshold"
)

// Reasons on validation errors.
const (
	ReasonTaskEmpty    = "TASK_EMPTY"
	ReasonTaskTooLarge = "TASK_TOO_LARGE"
	ReasonTaskEncoding = "TASK_NOT_UTF8"
	ReasonTopKRange    = "TOP_K_OUT_OF_RANGE"
)

// resolved is a validated request with defaults applied.
type resolved struct {
	task      string // control characters replaced, ready for analysis
	raw       string // the task with control characters replaced, for the embedder
	topK      int
	mode      skill.MatchMode
	fusion    skill.Fusion
	threshold *float64
	hidden    bool
	visible   func(*skill.Skill) bool
}

// resolve validates req against cfg. Errors are *skill.Error with
// CodeInvalidArgument and the request field at fault.
func resolve(req Request, cfg Config) (resolved, error) {
	var r resolved
	if len(req.Task) > cfg.MaxTaskBytes {
		return r, skill.InvalidArgument(FieldTask, "the task is %d bytes; the limit is %d", len(req.Task), cfg.MaxTaskBytes).
			WithReason(ReasonTaskTooLarge)
	}
	if !utf8.ValidString(req.Task) {
		return r, skill.InvalidArgument(FieldTask, "the task is not valid UTF-8").WithReason(ReasonTaskEncoding)
	}
	clean := strings.Map(controlToSpace, req.Task)
	if strings.TrimSpace(clean) == "" {
		return r, skill.InvalidArgument(FieldTask, "the task is empty").WithReason(ReasonTaskEmpty)
	}
	switch {
	case req.TopK < 0 || req.TopK > cfg.MaxTopK:
		return r, skill.InvalidArgument(FieldTopK, "top_k %d is outside [0, %d] (0 means %d)", req.TopK, cfg.MaxTopK, cfg.TopK).
			WithReason(ReasonTopKRange)
	case req.TopK == 0:
		r.topK = cfg.TopK
	default:
		r.topK = req.TopK
	}
	r.mode = req.Mode
	if r.mode == "" {
		r.mode = cfg.Mode
	}
	if !validMode(r.mode) {
		return r, skill.InvalidArgument(FieldMode, "mode %q is not hybrid, dense or bm25", req.Mode)
	}
	r.fusion = req.Fusion
	if r.fusion == "" {
		r.fusion = cfg.Fusion.Rule
	}
	if !validFusion(r.fusion) {
		return r, skill.InvalidArgument(FieldFusion, "fusion %q is not tiebreak, rrf, convex or adaptive", req.Fusion)
	}
	if t := req.Threshold; t != nil {
		if math.IsNaN(*t) || math.IsInf(*t, 0) {
			return r, skill.InvalidArgument(FieldThreshold, "the threshold must be a finite number")
		}
		v := *t
		r.threshold = &v
	}
	r.raw = clean
	r.task = normalizeText(clean)
	r.hidden = req.IncludeHidden
	r.visible = req.Visible
	if r.visible == nil {
		agent := req.Agent
		r.visible = func(s *skill.Skill) bool { return s.Root.Agent == "" || s.Root.Agent == agent }
	}
	return r, nil
}

func controlToSpace(r rune) rune {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return ' '
	}
	return r
}
