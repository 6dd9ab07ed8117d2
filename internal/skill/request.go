package skill

import (
	"math"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// Request field paths named in CodeInvalidArgument errors. They follow the
// gRPC API's JSON field names, so every front reports the same path.
const (
	FieldTask              = "task"
	FieldTopK              = "top_k"
	FieldAgent             = "agent"
	FieldMode              = "options.mode"
	FieldFusion            = "options.fusion"
	FieldThreshold         = "options.threshold"
	FieldName              = "name"
	FieldLevel             = "level"
	FieldResourcePath      = "resource_path"
	FieldTokenBudget       = "token_budget"
	FieldPageSize          = "page_size"
	FieldPageToken         = "page_token"
	FieldCatalogCharBudget = "catalog_char_budget"
	FieldSkill             = "skill"
	FieldScript            = "script"
	FieldDecisionID        = "decision_id"
	FieldKinds             = "options.kinds"
	FieldListKinds         = "kinds"
	FieldArguments         = "arguments"
)

// Reasons on errors, stable for clients.
const (
	ReasonTaskEmpty     = "TASK_EMPTY"
	ReasonTaskTooLarge  = "TASK_TOO_LARGE"
	ReasonTaskEncoding  = "TASK_NOT_UTF8"
	ReasonTopKRange     = "TOP_K_OUT_OF_RANGE"
	ReasonSkillNotFound = "SKILL_NOT_FOUND"
	ReasonSkillDisabled = "SKILL_DISABLED"

	ReasonArgumentsTooLarge  = "ARGUMENTS_TOO_LARGE"
	ReasonArgumentsNotObject = "ARGUMENTS_NOT_OBJECT"
	ReasonToolNotFound       = "TOOL_NOT_FOUND"
	ReasonToolsCallDisabled  = "TOOLS_CALL_DISABLED"
	ReasonToolNotAllowlisted = "TOOL_NOT_ALLOWLISTED"
	ReasonToolChanged        = "TOOL_CHANGED"
	ReasonServerUnavailable  = "SERVER_UNAVAILABLE"
	ReasonUpstreamTimeout    = "UPSTREAM_TIMEOUT"
	ReasonServerRateLimited  = "SERVER_RATE_LIMITED"
	ReasonNotATool           = "NOT_A_TOOL"

	// ReasonRouterUnreachable: a router reached over the network could
	// not be reached, and the call was never sent to it.
	ReasonRouterUnreachable = "ROUTER_UNREACHABLE"
	// ReasonRouterLost: the connection to a router reached over the
	// network broke while the call was under way; it may have run.
	ReasonRouterLost = "ROUTER_LOST"
)

// Request limits that do not depend on configuration.
const (
	MaxNameBytes     = 256
	DefaultPageSize  = 100
	MaxPageSize      = 1000
	MaxCatalogBudget = 1 << 20 // characters
	maxAgentBytes    = 64
)

var agentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateAgent checks an agent name. The empty name is the global view; an
// agent without skills of its own is valid and sees the global skills.
func ValidateAgent(agent string) error {
	if agent != "" && !agentRE.MatchString(agent) {
		return InvalidArgument(FieldAgent, "%q is not a valid agent name: agent names are 1-%d letters, digits, '.', '_' or '-'",
			Clip(agent, 40), maxAgentBytes)
	}
	return nil
}

// ValidateName checks a skill name given in request field field.
func ValidateName(field, name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return InvalidArgument(field, "required: the skill's name, as a list of skills shows it")
	case len(name) > MaxNameBytes:
		return InvalidArgument(field, "%d bytes long; skill names are at most %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return InvalidArgument(field, "not valid UTF-8")
	}
	return nil
}

// Clip shortens s to at most n bytes of valid UTF-8 for an error message,
// marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}

// MatchRequest asks which skills fit a task.
type MatchRequest struct {
	// Task is the text to route: UTF-8, not blank, at most
	// MatchLimits.MaxTaskBytes bytes. Control characters read as spaces.
	Task string
	// TopK is the most candidates to return; 0 means the configured
	// default.
	TopK int
	// Agent is the calling agent: it sees global skills and its own.
	Agent   string
	Options MatchOptions
}

// MatchOptions tune one match; zero values mean the configured defaults.
type MatchOptions struct {
	Mode   MatchMode
	Fusion Fusion
	// Threshold, when set, replaces both the model's threshold and the
	// calibrated classifier for this request: the best visible cosine
	// must reach it (in keyword-only matching, the best BM25 score).
	Threshold *float64
	// IncludeHidden also matches skills marked hidden: true.
	IncludeHidden bool
	// Kinds selects skills, tools or both (the default).
	Kinds KindFilter
}

// MatchLimits are the configured bounds of a MatchRequest.
type MatchLimits struct {
	MaxTaskBytes int
	MaxTopK      int
}

// Validate checks the request against lim. Errors are CodeInvalidArgument
// with the field at fault.
func (r *MatchRequest) Validate(lim MatchLimits) error {
	if len(r.Task) > lim.MaxTaskBytes {
		return InvalidArgument(FieldTask, "the task is %d bytes; the limit is %d", len(r.Task), lim.MaxTaskBytes).
			WithReason(ReasonTaskTooLarge)
	}
	if !utf8.ValidString(r.Task) {
		return InvalidArgument(FieldTask, "the task is not valid UTF-8").WithReason(ReasonTaskEncoding)
	}
	if strings.TrimSpace(strings.Map(ControlToSpace, r.Task)) == "" {
		return InvalidArgument(FieldTask, "the task is empty").WithReason(ReasonTaskEmpty)
	}
	if r.TopK < 0 || r.TopK > lim.MaxTopK {
		return InvalidArgument(FieldTopK, "top_k %d is outside [0, %d] (0 means the default)", r.TopK, lim.MaxTopK).
			WithReason(ReasonTopKRange)
	}
	if err := ValidateAgent(r.Agent); err != nil {
		return err
	}
	switch r.Options.Mode {
	case "", ModeHybrid, ModeDense, ModeKeyword:
	default:
		return InvalidArgument(FieldMode, "%q is not a match mode; want hybrid, dense or bm25", Clip(string(r.Options.Mode), 40))
	}
	switch r.Options.Fusion {
	case "", FusionTiebreak, FusionRRF, FusionConvex, FusionAdaptive:
	default:
		return InvalidArgument(FieldFusion, "%q is not a fusion rule; want tiebreak, rrf, convex or adaptive", Clip(string(r.Options.Fusion), 40))
	}
	if t := r.Options.Threshold; t != nil && (math.IsNaN(*t) || math.IsInf(*t, 0)) {
		return InvalidArgument(FieldThreshold, "the threshold must be a finite number")
	}
	return validateKinds(FieldKinds, r.Options.Kinds)
}

// ControlToSpace maps control characters to spaces; use with strings.Map.
func ControlToSpace(r rune) rune {
	if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
		return ' '
	}
	return r
}

// ListRequest asks for a page of level-1 summaries.
type ListRequest struct {
	Agent string
	// PageSize is 1 to MaxPageSize; 0 means DefaultPageSize.
	PageSize int
	// PageToken is the NextPageToken of the previous page, empty for the
	// first.
	PageToken       string
	IncludeHidden   bool
	IncludeDisabled bool
	// CatalogBudget, when positive, asks for a rendered catalog of at most
	// this many characters.
	CatalogBudget int
	// Kinds selects skills, tools or both (the default).
	Kinds KindFilter
}

// Validate checks the request. The page token is checked where it is
// decoded.
func (r *ListRequest) Validate() error {
	if err := ValidateAgent(r.Agent); err != nil {
		return err
	}
	if r.PageSize < 0 || r.PageSize > MaxPageSize {
		return InvalidArgument(FieldPageSize, "%d is out of range; want 1 to %d, or 0 for %d", r.PageSize, MaxPageSize, DefaultPageSize)
	}
	if r.CatalogBudget < 0 || r.CatalogBudget > MaxCatalogBudget {
		return InvalidArgument(FieldCatalogCharBudget, "%d is out of range; want 0 (no catalog) to %d", r.CatalogBudget, MaxCatalogBudget)
	}
	return validateKinds(FieldListKinds, r.Kinds)
}

// GetRequest names one skill.
type GetRequest struct {
	Name, Agent string
	// Manifest also asks for the skill's manifest (GetResult.Manifest):
	// its frontmatter as written and every file served with its digest.
	// It reads every file of the skill, so it fails where Load would: a
	// disabled skill or a tool is CodeFailedPrecondition.
	Manifest bool
}

// Validate checks the request.
func (r *GetRequest) Validate() error {
	if err := ValidateName(FieldName, r.Name); err != nil {
		return err
	}
	return ValidateAgent(r.Agent)
}

// LoadRequest asks for a skill at a disclosure level.
type LoadRequest struct {
	Name, Agent string
	Level       LoadLevel
	// ResourcePath names the file of a level-3 load, relative to the skill
	// folder.
	ResourcePath string
	// TokenBudget bounds a level-2 body; 0 means the default.
	TokenBudget int
	// Raw skips the untrusted-content frame.
	Raw bool
}

// Validate checks the request; maxBudget is the largest token budget in
// force. The resource path's syntax is checked where the file is read.
func (r *LoadRequest) Validate(maxBudget int) error {
	if !r.Level.Valid() {
		return InvalidArgument(FieldLevel, "%d is not a load level; want 1 (summary), 2 (body) or 3 (resource)", int(r.Level))
	}
	if r.Level != LevelResource && r.ResourcePath != "" {
		return InvalidArgument(FieldResourcePath, "only used at level 3; drop it or ask for level 3")
	}
	if r.Level != LevelBody && r.TokenBudget != 0 {
		return InvalidArgument(FieldTokenBudget, "only used at level 2")
	}
	if r.TokenBudget < 0 || r.TokenBudget > maxBudget {
		return InvalidArgument(FieldTokenBudget, "%d is out of range; want 1 to %d, or 0 for the default", r.TokenBudget, maxBudget)
	}
	if err := ValidateName(FieldName, r.Name); err != nil {
		return err
	}
	return ValidateAgent(r.Agent)
}

// ReindexRequest asks for a rescan.
type ReindexRequest struct {
	// Full reads and parses every file again, even unchanged ones.
	Full bool
}

// ExecRequest asks whether a skill's script may run.
type ExecRequest struct {
	Skill string
	// Script is the path of the script relative to the skill folder.
	Script string
	// Caller names the process that wants to run it, for the audit
	// record.
	Caller string
	Agent  string
}

// Validate checks the request.
func (r *ExecRequest) Validate() error {
	if err := ValidateName(FieldSkill, r.Skill); err != nil {
		return err
	}
	if r.Script == "" {
		return InvalidArgument(FieldScript, "required: a path relative to the skill folder, such as scripts/run.py")
	}
	return ValidateAgent(r.Agent)
}

// ExecReport is the outcome of a run the caller performed.
type ExecReport struct {
	DecisionID string
	// Skill and Script, when set, must be the decision's.
	Skill, Script, Caller string
	ExitCode              int
	Duration              time.Duration
	Error                 string
}

// Validate checks the report.
func (r *ExecReport) Validate() error {
	if r.DecisionID == "" {
		return InvalidArgument(FieldDecisionID, "required: the decision_id AuthorizeExec returned")
	}
	return nil
}
