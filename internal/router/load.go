package router

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillfs"
)

// Load serves a skill at level 1 (summary), 2 (body under a token budget) or
// 3 (one resource file). Hidden skills and skills excluded from model
// invocation load by name; disabled skills do not.
func (r *Router) Load(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	set := r.Settings()
	if err := req.Validate(set.MaxTokenBudget); err != nil {
		return nil, err
	}
	g, ent, err := r.lookup(ctx, req.Name, req.Agent)
	if err != nil {
		return nil, err
	}
	s := ent.Skill
	if s.IsTool() && req.Level != skill.LevelSummary {
		return nil, skill.Errorf(skill.CodeFailedPrecondition,
			"%s is a tool of MCP server %s: it has no body or files; find_tools (MCP) or Match (gRPC) returns its input schema, and call_tool or CallTool calls it", s.Name, s.Tool.Server)
	}
	if err := s.Refusal(); err != nil {
		return nil, err
	}
	res := &skill.LoadResult{Skill: s, Level: req.Level, Generation: g.ID, SHA256: s.ContentHash}
	switch req.Level {
	case skill.LevelBody:
		body, ok, err := g.Files.Body(s)
		if skill.ErrorCode(err) == skill.CodeUnavailable {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("read body of %q from the cache: %w", s.Name, err)
		}
		if !ok {
			return nil, skill.Errorf(skill.CodeUnavailable, "the body of %q is being reindexed; retry", s.Name)
		}
		budget := cmp.Or(req.TokenBudget, set.DefaultTokenBudget)
		text, tokens, truncated := skill.TruncateBody(body, budget)
		res.Content, res.Tokens, res.Truncated, res.TokenBudget = text, tokens, truncated, budget
		res.TotalTokens = s.BodyTokens
		res.MediaType = skill.MediaType(skill.FileName)
		if !req.Raw {
			res.Content, res.Framed = frame("skill_content", s, res.SHA256, "", truncated, text), true
		}
	case skill.LevelResource:
		f, err := skillfs.ReadResource(s.Dir, req.ResourcePath, r.cfg.MaxResourceBytes)
		if err != nil {
			return nil, err
		}
		res.ResourcePath, res.Size, res.MediaType = f.Path, f.Size, f.MediaType
		res.SHA256 = skill.Hash(f.Data)
		if !utf8.Valid(f.Data) {
			res.Data = f.Data
			break
		}
		text := string(f.Data)
		res.Tokens = skill.EstimateTokens(text)
		res.TotalTokens = res.Tokens
		res.Content = text
		if !req.Raw {
			res.Content, res.Framed = frame("skill_resource", s, res.SHA256, f.Path, false, text), true
		}
	}
	return res, nil
}

// frame wraps skill text in delimiters that mark it as data from a skill file,
// with its provenance: the skill, its source, and the sha256 of the file the
// text came from. Any closing delimiter inside the text is defused, so the
// text cannot end the frame early.
func frame(tag string, s *skill.Skill, sha256, resource string, truncated bool, text string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<%s name=%q source=%q root=%q sha256=%q trust=%q", tag, s.Name, s.Root.Kind, rootLabel(s.Root), sha256, trustLabel(s))
	if resource != "" {
		fmt.Fprintf(&b, " path=%q", resource)
	}
	if truncated {
		b.WriteString(` truncated="true"`)
	}
	closeFrame(&b, tag, text)
	return b.String()
}

// closeFrame ends the opening tag written to b, then writes text, defused
// (it can neither close the frame nor open another), and the closing tag.
func closeFrame(b *strings.Builder, tag, text string) {
	b.WriteString(">\n")
	b.WriteString(defuse(text))
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "</%s>\n", tag)
}

// trustLabel is how a frame states an entry's trust.
func trustLabel(s *skill.Skill) string {
	if s.Trusted() {
		return "trusted"
	}
	return "untrusted"
}

// rootLabel names a skill's root in a frame without revealing the host's
// layout: its path relative to the workspace, or only its folder name when
// it lies outside.
func rootLabel(r skill.Root) string {
	if filepath.IsAbs(r.Display) {
		return filepath.Base(r.Display)
	}
	return r.Display
}

// frameTags are the delimiters of frames (frame, frameToolResult). Text
// inside a frame may neither close it nor open a frame of its own, which
// would forge another provenance or trust.
var frameTags = []string{"skill_content", "skill_resource", "tool_result"}

// defuse breaks every "</tag" and "<tag" of a frame tag in text (ASCII
// case-insensitively) with a backslash after the "<": "<\/skill_content",
// "<\skill_content".
func defuse(text string) string {
	var b strings.Builder
	rest := text
	changed := false
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			break
		}
		j := i + 1
		b.WriteString(rest[:j])
		rest = rest[j:]
		if startsWithFrameTag(strings.TrimPrefix(rest, "/")) {
			b.WriteByte('\\')
			changed = true
		}
	}
	if !changed {
		return text
	}
	b.WriteString(rest)
	return b.String()
}

// startsWithFrameTag reports whether s starts with a frame tag.
func startsWithFrameTag(s string) bool {
	for _, tag := range frameTags {
		if len(s) >= len(tag) && asciiEqualFold(s[:len(tag)], tag) {
			return true
		}
	}
	return false
}

// asciiEqualFold compares two strings, folding ASCII letters only.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
