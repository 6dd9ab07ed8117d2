package server

import (
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/engine"
	"github.com/mcpsag/router/internal/loader"
	"github.com/mcpsag/router/internal/skill"
)

var sourceKinds = map[skill.SourceKind]routerv1.SourceKind{
	skill.KindProject: routerv1.SourceKind_SOURCE_KIND_PROJECT,
	skill.KindUser:    routerv1.SourceKind_SOURCE_KIND_USER,
	skill.KindLearned: routerv1.SourceKind_SOURCE_KIND_LEARNED,
	skill.KindBundled: routerv1.SourceKind_SOURCE_KIND_BUNDLED,
}

func sourcePB(s *skill.Skill) *routerv1.SkillSource {
	if s == nil {
		return nil
	}
	return &routerv1.SkillSource{
		Kind:  sourceKinds[s.Root.Kind],
		Root:  s.Root.Display,
		Agent: s.Root.Agent,
		Path:  s.RelPath,
	}
}

func trustPB(s *skill.Skill) routerv1.Trust {
	if s.Trusted() {
		return routerv1.Trust_TRUST_TRUSTED
	}
	return routerv1.Trust_TRUST_UNTRUSTED
}

func summaryPB(s *skill.Skill) *routerv1.SkillSummary {
	return &routerv1.SkillSummary{
		Name:        s.Name,
		Description: s.Description(),
		Source:      sourcePB(s),
		Tags:        s.Tags(),
		Trust:       trustPB(s),
	}
}

func frontmatterPB(f skill.Frontmatter) *routerv1.Frontmatter {
	return &routerv1.Frontmatter{
		Name:                   f.Name,
		Description:            f.Description,
		License:                f.License,
		Compatibility:          f.Compatibility,
		Metadata:               f.Metadata,
		AllowedTools:           f.AllowedTools,
		Triggers:               f.Triggers,
		Tags:                   f.Tags,
		Hidden:                 f.Hidden,
		DisableModelInvocation: f.DisableModelInvocation,
		UserInvocable:          f.UserInvocable,
		Extra:                  f.Extra,
	}
}

func problemsPB(ps []skill.Problem) []*routerv1.Problem {
	out := make([]*routerv1.Problem, 0, len(ps))
	for _, p := range ps {
		sev := routerv1.Severity_SEVERITY_WARNING
		if p.Severity == skill.SeverityError {
			sev = routerv1.Severity_SEVERITY_ERROR
		}
		out = append(out, &routerv1.Problem{
			Severity: sev, Code: p.Code, Field: p.Field, File: p.File, Line: int32(p.Line), Message: p.Message,
		})
	}
	return out
}

func resourcesPB(rs []skill.Resource) []*routerv1.Resource {
	out := make([]*routerv1.Resource, 0, len(rs))
	for _, r := range rs {
		out = append(out, &routerv1.Resource{Path: r.Path, SizeBytes: r.Size})
	}
	return out
}

func detailPB(ent *loader.Entry) *routerv1.SkillDetail {
	s := ent.Skill
	d := &routerv1.SkillDetail{
		Name:               s.Name,
		Frontmatter:        frontmatterPB(s.Frontmatter),
		Source:             sourcePB(s),
		Precedence:         int32(ent.Rank),
		ContentSha256:      s.ContentHash,
		FrontmatterSha256:  s.FrontmatterHash,
		Resources:          resourcesPB(s.Resources),
		ResourcesTruncated: s.ResourcesTruncated,
		Problems:           problemsPB(s.Problems),
		Enabled:            s.Enabled(),
		DisabledReason:     loader.DisabledReason(s),
		Owner:              s.Registry.Owner,
		Trust:              trustPB(s),
		SizeBytes:          s.Size,
		Modified:           timestamppb.New(s.ModTime),
		BodyTokens:         int32(s.BodyTokens),
		ModelInvocable:     s.Enabled() && !s.Frontmatter.DisableModelInvocation,
	}
	for _, sh := range ent.Shadows {
		d.Shadows = append(d.Shadows, sourcePB(sh.Skill))
	}
	if ent.ShadowedBy != nil {
		d.ShadowedBy = sourcePB(ent.ShadowedBy.Skill)
	}
	return d
}

func shadowsPB(shadows []loader.Shadow) []*routerv1.ShadowedSkill {
	out := make([]*routerv1.ShadowedSkill, 0, len(shadows))
	for _, s := range shadows {
		out = append(out, &routerv1.ShadowedSkill{
			Name: s.Name, Winner: sourcePB(s.Winner), Shadowed: sourcePB(s.Loser), Reason: s.Reason,
		})
	}
	return out
}

func catalogPB(c *engine.RenderedCatalog) *routerv1.RenderedCatalog {
	if c == nil {
		return nil
	}
	return &routerv1.RenderedCatalog{
		Text: c.Text, Chars: int32(c.Chars), Budget: int32(c.Budget),
		Included: c.Included, Shortened: c.Shortened, Cut: c.Cut,
	}
}

func statsPB(st loader.Stats) *routerv1.ReindexStats {
	out := &routerv1.ReindexStats{
		Scanned: int32(st.Scanned), Added: int32(st.Added), Changed: int32(st.Changed),
		Removed: int32(st.Removed), Unchanged: int32(st.Unchanged), Invalid: int32(st.Invalid),
		Parsed: int32(st.Parsed), Duration: durationpb.New(st.Duration), IndexGeneration: st.Generation,
	}
	if !st.FinishedAt.IsZero() {
		out.FinishedAt = timestamppb.New(st.FinishedAt)
	}
	return out
}

func statusPB(st engine.Status) *routerv1.StatusResponse {
	byCode := make(map[string]int32, len(st.ProblemsByCode))
	for k, v := range st.ProblemsByCode {
		byCode[k] = int32(v)
	}
	out := &routerv1.StatusResponse{
		Version:           st.Version,
		StartedAt:         timestamppb.New(st.StartedAt),
		Serving:           st.Serving,
		IndexGeneration:   st.Generation,
		Skills:            int32(st.Skills),
		SkillsDisabled:    int32(st.Disabled),
		SkillsHidden:      int32(st.Hidden),
		SkillsShadowed:    int32(st.Shadowed),
		SkillsAgentScoped: int32(st.AgentScoped),
		FilesInvalid:      int32(st.FilesInvalid),
		LastReindex:       statsPB(st.LastStats),
		LastReindexError:  st.LastReindexError,
		ReindexProgress: &routerv1.ReindexProgress{
			Running: st.Progress.Running, Phase: st.Progress.Phase,
			Done: int32(st.Progress.Done), Total: int32(st.Progress.Total),
		},
		Validation: &routerv1.ValidationSummary{Errors: int32(st.Errors), Warnings: int32(st.Warnings), ByCode: byCode},
		Shadowed:   shadowsPB(st.Shadows),
		Flags:      &routerv1.FeatureFlags{SkillsV1: st.Flags.SkillsV1, SkillsExec: st.Flags.SkillsExec},
		Agents:     st.Agents,
	}
	return out
}

func loadPB(r *engine.LoadResult) *routerv1.LoadResponse {
	s := r.Skill
	out := &routerv1.LoadResponse{
		Name:          s.Name,
		Level:         routerv1.LoadLevel(r.Level),
		Summary:       summaryPB(s),
		Content:       r.Content,
		Data:          r.Data,
		Framed:        r.Framed,
		Truncated:     r.Truncated,
		Tokens:        int32(r.Tokens),
		TotalTokens:   int32(r.TotalTokens),
		TokenBudget:   int32(r.TokenBudget),
		TokenCounting: skill.TokenCounting,
		Provenance:    &routerv1.Provenance{Source: sourcePB(s), Sha256: r.SHA256, Trust: trustPB(s)},
		ResourcePath:  r.ResourcePath,
		SizeBytes:     r.Size,
		MediaType:     r.MediaType,
	}
	if r.Level == skill.LevelBody {
		out.Resources = resourcesPB(s.Resources)
	}
	return out
}
