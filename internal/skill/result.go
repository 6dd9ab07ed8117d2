package skill

import (
	"fmt"
	"strings"
	"time"
)

// Entry is one valid copy of a skill and its place in the precedence order.
type Entry struct {
	Skill *Skill
	// Rank is the 1-based position of the skill's root in the precedence
	// order (1 wins).
	Rank int
	// ShadowedBy is the copy that hides this one in its own scope.
	ShadowedBy *Entry
	// Shadows lists the copies this one hides.
	Shadows []*Entry
}

// Shadow records a name collision.
type Shadow struct {
	Name   string
	Winner *Skill
	Loser  *Skill
	Reason string
	// Agent is set when the collision only exists for that agent (an
	// agent-scoped skill hiding a global one).
	Agent string
}

// RenderedCatalog is a prompt-ready skill list that fits a character budget.
type RenderedCatalog struct {
	Text   string
	Chars  int
	Budget int
	// Included, Shortened and Cut name skills: listed, listed with a
	// shortened description (or none), and left out.
	Included, Shortened, Cut []string
}

// ListResult is one page of skills.
type ListResult struct {
	Skills        []*Skill
	NextPageToken string
	// Total counts the skills of every page.
	Total      int
	Catalog    *RenderedCatalog // nil unless asked for
	Shadowed   []Shadow
	Generation uint64
}

// GetResult is one skill with its precedence entry.
type GetResult struct {
	Entry *Entry
	// Manifest is set when GetRequest.Manifest asked for it.
	Manifest   *Manifest
	Generation uint64
}

// Manifest describes a skill's files as they are on disk now, so that a
// client can check what it reads: the SKILL.md frontmatter as written and
// every file the router serves with its size and digest.
type Manifest struct {
	// Frontmatter is the SKILL.md frontmatter as a JSON object, every field
	// as the author wrote it. A frontmatter without a name gets the
	// skill's name.
	Frontmatter []byte
	// Files lists SKILL.md first, then every other file a level-3 load
	// serves, sorted by path. Files a load would refuse (too large, not
	// regular, hard-linked, gone) are left out.
	Files []FileDigest
}

// FileDigest is one file of a skill with the size and sha256 of its bytes.
type FileDigest struct {
	// Path is slash-separated and relative to the skill folder.
	Path string
	Size int64
	// SHA256 is the lower-case hex sha256 of the file's bytes.
	SHA256 string
}

// LoadResult is a loaded skill.
type LoadResult struct {
	Skill *Skill
	Level LoadLevel
	// Content is the body (level 2) or text resource (level 3), framed
	// unless Raw was asked.
	Content string
	// Data holds a level-3 resource that is not UTF-8 text.
	Data              []byte
	Framed, Truncated bool
	// Tokens and TotalTokens are estimates for the returned and the whole
	// body (level 2) or resource text (level 3).
	Tokens, TotalTokens, TokenBudget int
	// SHA256 is the hash of the file the content came from: SKILL.md at
	// levels 1 and 2, the resource file at level 3.
	SHA256       string
	ResourcePath string
	Size         int64
	MediaType    string
	Generation   uint64
}

// ReindexStats describe one reindex pass.
type ReindexStats struct {
	Scanned, Added, Changed, Removed, Unchanged, Invalid int
	// Parsed counts files read and parsed in this pass; a warm restart
	// parses none.
	Parsed int
	// Embedded counts embeddings computed in this pass; a restart with
	// unchanged skills computes none.
	Embedded   int
	Duration   time.Duration
	Generation uint64
	FinishedAt time.Time
	// Published is false when nothing changed and the previous
	// generation was kept.
	Published bool
}

// Progress is a snapshot of a running reindex.
type Progress struct {
	Running bool
	// Phase is the build's step ("scan", "parse", "store", "embed",
	// "index"), or PhaseWatch between builds.
	Phase       string
	Done, Total int
}

// PhaseWatch is Progress.Phase while the file watcher adds the folders of a
// scan.
const PhaseWatch = "watch"

// Flags are the feature flags.
type Flags struct {
	SkillsV1   bool
	SkillsExec bool
	// ToolsCall lets CallTool forward calls to MCP servers' tools.
	ToolsCall bool
}

// ConfigState describes the configuration file in force.
type ConfigState struct {
	Path     string
	LoadedAt time.Time
	// Error is the last rejected edit, empty when the file on disk is the
	// one in force.
	Error string
}

// ModelStatus describes the embedding model in use.
type ModelStatus struct {
	Name        string
	Dimension   int
	Fingerprint string
	Path        string
	// LoadDuration is how long loading took; QueryLatency one warm query.
	LoadDuration, QueryLatency time.Duration
	// EmbeddingsComputed counts texts embedded since start.
	EmbeddingsComputed int64
	// VectorsCached counts the model's vectors in the cache.
	VectorsCached  int
	MatchThreshold float64
	// Serving is set when the served generation's vectors are this
	// model's.
	Serving bool
	// Released is set while the model is unloaded until an embedding
	// needs it again (embed.Manager.Release).
	Released bool
}

// Backfill is the progress of the skill texts the model embeds in the
// background, while the fast model's vectors (or keywords) are served.
type Backfill struct {
	// Model names the model computing vectors; empty when none are being
	// computed.
	Model string
	// Done and Total count the texts embedded so far and to embed.
	Done, Total int
	Started     time.Time
}

// Status describes the router for operators.
type Status struct {
	Version   string
	StartedAt time.Time
	Serving   bool

	// Generation and GenerationID identify the served generation, as in
	// MatchResult.
	Generation   uint64
	GenerationID string
	// CatchingUp is set while the served generation was built from the
	// last scan kept in the state directory, not from the roots: the
	// router is scanning them for changes made while it was stopped.
	CatchingUp bool
	// Skills counts the skills served to callers without an agent.
	Skills, Disabled, Hidden, Shadowed, AgentScoped int
	// FilesInvalid counts SKILL.md files skipped because they never parsed.
	FilesInvalid int
	Agents       []string
	Shadows      []Shadow

	// LastReindex is when the last pass ran; LastStats describe the pass
	// that built the current generation.
	LastReindex      time.Time
	LastStats        ReindexStats
	LastReindexError string
	Progress         Progress
	// ParsedTotal counts files parsed since start.
	ParsedTotal int64

	Errors, Warnings int
	ProblemsByCode   map[string]int

	Flags  Flags
	Config ConfigState

	// Model is the embedding model's state; nil when no model is loaded.
	Model *ModelStatus
	// FastModel is the fast model's state, the model served while Model's
	// vectors are computed or when Model is unavailable; nil when there
	// is none, and until a reindex first needs its vectors.
	FastModel *ModelStatus
	// Backfill says how far the background embedding has come.
	Backfill Backfill
	// Degraded is set when matching uses keywords only.
	Degraded       bool
	DegradedReason string

	// Tools counts the tools of MCP servers served to callers without an
	// agent; Servers describes every configured server.
	Tools   int
	Servers []ServerStatus
}

// DenyReason says why a script may not run.
type DenyReason string

// Deny reasons, in the order AuthorizeExec checks them.
const (
	DenyExecDisabled   DenyReason = "exec_disabled"   // feature flag skills_exec is off
	DenyNotFound       DenyReason = "not_found"       // no such skill or script
	DenySkillDisabled  DenyReason = "skill_disabled"  // disabled in registry.json
	DenyPathEscape     DenyReason = "path_escape"     // the path leaves the skill folder
	DenyNotAllowlisted DenyReason = "not_allowlisted" // no ALLOWLIST.txt entry (or an untrusted skill's entry is unpinned)
	DenyHashMismatch   DenyReason = "hash_mismatch"   // the content differs from the pinned sha256
)

// Decision is the outcome of an access decision, in audit records.
type Decision string

// Decisions.
const (
	DecisionAllow       Decision = "allow"
	DecisionDeny        Decision = "deny"
	DecisionRateLimited Decision = "rate_limited"
)

// ExecDecision answers an ExecRequest.
type ExecDecision struct {
	Allowed bool
	Reason  DenyReason // empty when allowed
	Message string
	// ScriptSHA256 is the hash of the script as it is now, when it could
	// be read.
	ScriptSHA256 string
	// DecisionID names the decision in the audit log and in
	// ReportExecResult.
	DecisionID string
}

// DisabledReason says why s is not served, or "" when it is: "disabled by
// SOURCE (enabled: false)" for a skill its registry turns off, "too large:
// ..." for one over the size limits.
func (s *Skill) DisabledReason() string {
	switch {
	case s.Registry.Enabled != nil && !*s.Registry.Enabled:
		return fmt.Sprintf("disabled by %s (enabled: false)", s.Registry.Source)
	case s.Oversize != "":
		return oversizePrefix + s.Oversize
	}
	return ""
}

// oversizePrefix starts the DisabledReason of a skill over the size limits.
const oversizePrefix = "too large: "

// OversizeOf reads Oversize back from a DisabledReason, "" when the reason
// is another.
func OversizeOf(disabledReason string) string {
	o, _ := strings.CutPrefix(disabledReason, oversizePrefix)
	if o == disabledReason {
		return ""
	}
	return o
}

// Refusal is the error every request for s gets when s is not served (nil
// when it is): failed precondition, with reason ReasonSkillDisabled or
// ReasonSkillTooLarge and the same message whatever asked.
func (s *Skill) Refusal() *Error {
	if s.Enabled() {
		return nil
	}
	reason := ReasonSkillDisabled
	if s.Registry.Enabled == nil || *s.Registry.Enabled {
		reason = ReasonSkillTooLarge
	}
	return Errorf(CodeFailedPrecondition, "skill %q is %s", s.Name, s.DisabledReason()).WithReason(reason)
}
