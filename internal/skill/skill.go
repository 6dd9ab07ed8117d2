// Package skill is the router's domain: where skills come from (Root,
// SourceKind), what a parsed SKILL.md is (Skill, Frontmatter, Problem), what a
// match returns (Candidate, MatchResult), how much of a skill a caller may
// load (LoadLevel), the name and media types of a skill's files (FileName,
// MediaType), the audit record of an MCP call (MCPCall), and the service
// contract every front end speaks (Router, with its request and result
// types, each request validating itself, and Relay, the one forwarding of
// its methods). It imports nothing else from this module, so every other
// package can share these types without cycles.
package skill

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"
)

// SourceKind says where a skill root comes from. The kind decides precedence
// when two roots hold skills with the same name.
type SourceKind string

// Source kinds, in the default precedence order (highest first).
const (
	KindProject SourceKind = "project" // the repository being worked on
	KindUser    SourceKind = "user"    // the operator's personal skills
	KindLearned SourceKind = "learned" // skills written by agents; untrusted
	KindBundled SourceKind = "bundled" // skills shipped with a host or the router
)

// DefaultPrecedence is the default order of source kinds, highest first.
// Hosts disagree (Claude Code puts user above project), so it is configurable.
var DefaultPrecedence = []SourceKind{KindProject, KindUser, KindLearned, KindBundled}

// ParseSourceKind returns the kind named s, or an error naming the valid kinds.
func ParseSourceKind(s string) (SourceKind, error) {
	switch k := SourceKind(s); k {
	case KindProject, KindUser, KindLearned, KindBundled:
		return k, nil
	}
	return "", fmt.Errorf("unknown source kind %q (want project, user, learned or bundled)", s)
}

// Root is one configured folder that holds skill folders.
type Root struct {
	// Path is the absolute, cleaned path of the folder.
	Path string
	// Display is how the root is shown to clients: relative to the
	// workspace when it lies inside it, else the absolute path.
	Display string
	Kind    SourceKind
	// Agent, when set, scopes the root's skills to that agent: they are
	// invisible to other agents and shadow same-named global skills.
	Agent string
	// Order is the root's position in the configuration; it breaks ties
	// between roots of the same kind (earlier wins).
	Order int
}

// Frontmatter is the YAML header of a SKILL.md: the Agent Skills spec fields
// plus the host extensions the router understands. Fields it does not know
// are kept in Extra.
type Frontmatter struct {
	Name          string
	Description   string
	License       string
	Compatibility string
	Metadata      map[string]string
	// AllowedTools is advisory metadata, never a grant.
	AllowedTools []string
	// Triggers are phrases that, when they appear in a task, raise the
	// skill's match score by a bounded amount.
	Triggers []string
	Tags     []string
	// Hidden skills are left out of listings and matches unless asked for.
	Hidden bool
	// DisableModelInvocation keeps the skill out of Match; it can still be
	// loaded by name.
	DisableModelInvocation bool
	// UserInvocable is nil when the field is absent.
	UserInvocable *bool
	// Extra holds unknown fields as compact JSON text, keyed by field name.
	Extra map[string]string
}

// Resource is a file inside a skill folder other than SKILL.md.
type Resource struct {
	// Path is slash-separated and relative to the skill folder.
	Path string
	Size int64
}

// Skill is one parsed and validated SKILL.md with its folder's resources.
// Body text is not kept here; it lives in the store and is read on Load.
type Skill struct {
	// Name is the frontmatter name, or the folder name when the name is
	// missing (with a warning). It is the skill's identity.
	Name string
	// Dir is the absolute path of the skill folder.
	Dir string
	// RelPath is SKILL.md's path relative to its root, slash-separated.
	RelPath string
	Root    Root

	Frontmatter Frontmatter
	// BodyLine is the 1-based line of the SKILL.md where the body starts.
	BodyLine int
	// BodyTokens is the estimated token count of the whole body.
	BodyTokens int

	ContentHash     string // hex sha256 of the SKILL.md bytes
	FrontmatterHash string // hex sha256 of the raw frontmatter text
	Size            int64
	ModTime         time.Time

	Resources []Resource
	// ResourcesTruncated is set when the folder held more files than the
	// listing cap.
	ResourcesTruncated bool
	// Oversize says how the skill exceeds the router's SizeLimits, "" when
	// it does not; such a skill is not served (see Enabled).
	Oversize string
	Problems []Problem

	Registry RegistryEntry

	// Kind is EntrySkill for a SKILL.md and EntryTool for a tool of a
	// connected MCP server, whose specifics are in Tool.
	Kind EntryKind
	Tool *Tool
}

// Description is a shortcut for the frontmatter description.
func (s *Skill) Description() string { return s.Frontmatter.Description }

// Enabled reports whether the skill is served: governance allows it
// (registry.json) and it is within the router's size limits. A skill that
// is not is neither listed, matched, loaded nor read; DisabledReason and
// Refusal say why.
func (s *Skill) Enabled() bool {
	return (s.Registry.Enabled == nil || *s.Registry.Enabled) && s.Oversize == ""
}

// Tags merges frontmatter tags with registry tags, without duplicates.
func (s *Skill) Tags() []string {
	seen := make(map[string]bool, len(s.Frontmatter.Tags)+len(s.Registry.Tags))
	var out []string
	for _, list := range [][]string{s.Frontmatter.Tags, s.Registry.Tags} {
		for _, t := range list {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// Trusted reports whether the skill's source is trusted. Learned skills are
// written by agents and are always untrusted; a tool is as trusted as the
// operator declared its server.
func (s *Skill) Trusted() bool {
	if s.Kind == EntryTool {
		return s.Tool != nil && s.Tool.Trusted
	}
	return s.Root.Kind != KindLearned
}

// RegistryEntry is a skill's governance record from a root's registry.json.
type RegistryEntry struct {
	Owner string
	Tags  []string
	// Enabled is nil when the registry says nothing about the skill.
	Enabled *bool
	// Source is the registry file the entry came from, empty when none.
	Source string
}

// Severity grades a Problem.
type Severity int

// Severities. An error means the file was skipped; a warning means it was
// loaded anyway.
const (
	SeverityWarning Severity = iota + 1
	SeverityError
)

func (s Severity) String() string {
	switch s {
	case SeverityWarning:
		return "warning"
	case SeverityError:
		return "error"
	}
	return "unknown"
}

// Problem is one validation finding about a SKILL.md or a registry file.
type Problem struct {
	Severity Severity
	// Code is a stable, machine-readable identifier such as "name-mismatch".
	Code string
	// Field is the frontmatter field concerned, empty when none.
	Field string
	// File is the path of the file concerned, as shown to users.
	File string
	// Line is 1-based; 0 when unknown.
	Line    int
	Message string
}

func (p Problem) String() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if loc == "" {
		return fmt.Sprintf("%s: %s (%s)", p.Severity, p.Message, p.Code)
	}
	return fmt.Sprintf("%s: %s: %s (%s)", loc, p.Severity, p.Message, p.Code)
}

// HasErrors reports whether any problem in ps is an error.
func HasErrors(ps []Problem) bool {
	for _, p := range ps {
		if p.Severity == SeverityError {
			return true
		}
	}
	return false
}

// TallyProblems counts problems by code, and the errors and the warnings
// among them.
func TallyProblems(ps []Problem) (byCode map[string]int, errors, warnings int) {
	byCode = map[string]int{}
	for _, p := range ps {
		byCode[p.Code]++
		if p.Severity == SeverityError {
			errors++
		} else {
			warnings++
		}
	}
	return byCode, errors, warnings
}

// SortProblems orders problems by file, line, code and message, for stable
// output.
func SortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		if ps[i].File != ps[j].File {
			return ps[i].File < ps[j].File
		}
		if ps[i].Line != ps[j].Line {
			return ps[i].Line < ps[j].Line
		}
		if ps[i].Code != ps[j].Code {
			return ps[i].Code < ps[j].Code
		}
		return ps[i].Message < ps[j].Message
	})
}

// Hash returns the hex sha256 of b: the form of ContentHash,
// FrontmatterHash and the hashes of resource files.
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
