package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// LoadRequest asks for a skill at a disclosure level.
type LoadRequest struct {
	Name, Agent  string
	Level        skill.LoadLevel
	ResourcePath string
	// TokenBudget bounds a level-2 body; 0 means the default.
	TokenBudget int
	// Raw skips the untrusted-content frame.
	Raw bool
}

// LoadResult is a loaded skill.
type LoadResult struct {
	Skill *skill.Skill
	Level skill.LoadLevel
	// Content is the body (level 2) or text resource (level 3), framed
	// unless Raw was asked.
	Content string
	// Data holds a level-3 resource that is not UTF-8 text.
	Data              []byte
	Framed, Truncated bool
	// Tokens and TotalTokens are estimates for the returned and the whole
	// body (level 2) or resource text (level 3).
	Tokens, TotalTokens, TokenBudget int
	// SHA256 is the hash of the file the content came from.
	SHA256       string
	ResourcePath string
	Size         int64
	MediaType    string
	Generation   uint64
}

// Load serves a skill at level 1 (summary), 2 (body under a token budget) or 3
// (one resource file). Hidden skills and skills excluded from model
// invocation load by name; disabled skills do not. Every load is recorded as
// a skill_loaded event; every level-3 request, allowed or not, as
// skill_resource_requested.
func (e *Engine) Load(ctx context.Context, req LoadRequest) (*LoadResult, error) {
	start := time.Now()
	res, err := e.load(req)
	e.recordLoad(ctx, req, res, err, time.Since(start))
	return res, err
}

// recordLoad emits the load events.
func (e *Engine) recordLoad(ctx context.Context, req LoadRequest, res *LoadResult, err error, latency time.Duration) {
	if req.Level == skill.LevelResource {
		q := telemetry.ResourceRequest{Agent: req.Agent, Resource: req.ResourcePath, Allowed: err == nil}
		if res != nil {
			q.Skill, q.Bytes = res.Skill.Name, res.Size
		} else if cat, err := e.Catalog(); err == nil {
			if ent, ok := cat.Lookup(req.Name, req.Agent); ok {
				q.Skill = ent.Skill.Name
			}
		}
		if err != nil {
			q.DenyReason = denyReason(err)
		}
		e.rec.ResourceRequested(ctx, q)
	}
	if err != nil {
		return
	}
	path := res.Skill.RelPath
	if res.Level == skill.LevelResource {
		path = res.ResourcePath
	}
	e.rec.SkillLoaded(ctx, telemetry.Load{
		Skill: res.Skill.Name, Source: res.Skill.Root.Kind, Agent: req.Agent, Level: res.Level, Path: path,
		Tokens: res.Tokens, TotalTokens: res.TotalTokens, Budget: res.TokenBudget, Truncated: res.Truncated, Latency: latency,
	})
}

// denyReason turns an error into a stable lower-case code for telemetry.
func denyReason(err error) string {
	var de *skill.Error
	if errors.As(err, &de) && de.Reason != "" {
		return strings.ToLower(de.Reason)
	}
	return skill.ErrorCode(err).String()
}

func (e *Engine) load(req LoadRequest) (*LoadResult, error) {
	if !req.Level.Valid() {
		return nil, skill.InvalidArgument("level", "%d is not a load level; want 1 (summary), 2 (body) or 3 (resource)", int(req.Level))
	}
	if req.Level != skill.LevelResource && req.ResourcePath != "" {
		return nil, skill.InvalidArgument("resource_path", "only used at level 3; drop it or ask for level 3")
	}
	if req.Level != skill.LevelBody && req.TokenBudget != 0 {
		return nil, skill.InvalidArgument("token_budget", "only used at level 2")
	}
	set := e.Settings()
	budget := req.TokenBudget
	switch {
	case budget < 0 || budget > set.MaxTokenBudget:
		return nil, skill.InvalidArgument("token_budget", "%d is out of range; want 1 to %d, or 0 for the default %d", budget, set.MaxTokenBudget, set.DefaultTokenBudget)
	case budget == 0:
		budget = set.DefaultTokenBudget
	}
	cat, ent, err := e.lookup(req.Name, req.Agent)
	if err != nil {
		return nil, err
	}
	s := ent.Skill
	if !s.Enabled() {
		return nil, skill.Errorf(skill.CodeFailedPrecondition, "skill %q is %s", s.Name, loader.DisabledReason(s)).WithReason("SKILL_DISABLED")
	}
	res := &LoadResult{Skill: s, Level: req.Level, Generation: cat.Generation, SHA256: s.ContentHash}
	switch req.Level {
	case skill.LevelBody:
		body, ok, err := e.db.Body(s.ContentHash)
		if err != nil {
			return nil, skill.Errorf(skill.CodeInternal, "read body of %q from the cache: %v", s.Name, err)
		}
		if !ok {
			return nil, skill.Errorf(skill.CodeUnavailable, "the body of %q is being reindexed; retry", s.Name)
		}
		text, tokens, truncated := loader.TruncateBody(body, budget)
		res.Content, res.Tokens, res.Truncated, res.TokenBudget = text, tokens, truncated, budget
		res.TotalTokens = s.BodyTokens
		res.MediaType = "text/markdown; charset=utf-8"
		if !req.Raw {
			res.Content, res.Framed = frame("skill_content", s, "", truncated, text), true
		}
	case skill.LevelResource:
		r, err := loader.ReadResource(s.Dir, req.ResourcePath, e.cfg.MaxResourceBytes)
		if err != nil {
			return nil, err
		}
		res.ResourcePath, res.Size, res.MediaType = r.Path, r.Size, r.MediaType
		res.SHA256 = sha256Hex(r.Data)
		if !utf8.Valid(r.Data) {
			res.Data = r.Data
			break
		}
		text := string(r.Data)
		res.Tokens = skill.EstimateTokens(text)
		res.TotalTokens = res.Tokens
		res.Content = text
		if !req.Raw {
			res.Content, res.Framed = frame("skill_resource", s, r.Path, false, text), true
		}
	}
	return res, nil
}

// frame wraps skill text in delimiters that mark it as data from a skill file,
// with its provenance. Any closing delimiter inside the text is defused, so
// the text cannot end the frame early.
func frame(tag string, s *skill.Skill, resource string, truncated bool, text string) string {
	trust := "trusted"
	if !s.Trusted() {
		trust = "untrusted"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<%s name=%q source=%q root=%q sha256=%q trust=%q", tag, s.Name, s.Root.Kind, s.Root.Display, s.ContentHash, trust)
	if resource != "" {
		fmt.Fprintf(&b, " path=%q", resource)
	}
	if truncated {
		b.WriteString(` truncated="true"`)
	}
	b.WriteString(">\n")
	b.WriteString(defuse(text, tag))
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "</%s>\n", tag)
	return b.String()
}

// defuse breaks any "</tag" in text (case-insensitively) so it cannot close
// the frame.
func defuse(text, tag string) string {
	closing := "</" + tag
	lower := strings.ToLower(text)
	if !strings.Contains(lower, closing) {
		return text
	}
	var b strings.Builder
	for {
		i := strings.Index(lower, closing)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		b.WriteString(`<\/`)
		text, lower = text[i+2:], lower[i+2:]
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
