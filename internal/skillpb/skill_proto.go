package skillpb

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// Skills and tools, as the API describes them: a source locates one, a
// summary is its level 1, a detail all of it. The domain form of each holds
// what the API carries and nothing more.

// sourcePB locates s; nil for nil.
func sourcePB(s *skill.Skill) *routerv1.SkillSource {
	if s == nil {
		return nil
	}
	return &routerv1.SkillSource{Kind: sourceKinds.toPB[s.Root.Kind], Root: validText(s.Root.Display), Agent: s.Root.Agent, Path: validText(s.RelPath)}
}

// validText is s fit for a protobuf string, which must be UTF-8: s itself, or
// with U+FFFD for each invalid byte sequence. File and folder names are
// byte strings: one that is no UTF-8 would fail the whole reply.
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// source is the skill a SkillSource locates, with nothing else known.
func source(src *routerv1.SkillSource) *skill.Skill {
	if src == nil {
		return nil
	}
	return &skill.Skill{
		Root:    skill.Root{Kind: sourceKinds.fromPB[src.GetKind()], Display: src.GetRoot(), Agent: src.GetAgent()},
		RelPath: src.GetPath(),
	}
}

// named gives a skill located by its source the name it shares.
func named(s *skill.Skill, name string) *skill.Skill {
	if s != nil {
		s.Name = name
	}
	return s
}

// SummaryPB describes s at level 1.
func SummaryPB(s *skill.Skill) *routerv1.SkillSummary {
	return &routerv1.SkillSummary{
		Name: s.Name, Description: s.Description(), Source: sourcePB(s), Tags: s.Tags(),
		Trust: trustPB(s.Trusted()), Kind: entryKindPB(s), Tool: toolPB(s),
	}
}

// Summary is the inverse of SummaryPB: name, description, tags, source and,
// for a tool, its definition. The API's summary does not carry the other
// frontmatter fields (hidden, user-invocable and the rest).
func Summary(s *routerv1.SkillSummary) *skill.Skill {
	if s == nil {
		return nil
	}
	out := source(s.GetSource())
	if out == nil {
		out = &skill.Skill{}
	}
	out.Name = s.GetName()
	out.Frontmatter = skill.Frontmatter{Name: s.GetName(), Description: s.GetDescription(), Tags: s.GetTags()}
	withTool(out, s.GetKind(), s.GetTool(), s.GetTrust())
	return out
}

// toolPB describes a tool entry; nil for a skill.
func toolPB(s *skill.Skill) *routerv1.ToolInfo {
	if !s.IsTool() {
		return nil
	}
	t := s.Tool
	return &routerv1.ToolInfo{
		Server: t.Server, UpstreamName: t.Name, Title: t.Title, InputSchema: string(t.InputSchema),
		Agents: t.Agents, DefinitionSha256: s.ContentHash,
		Hints: &routerv1.ToolHints{Title: t.Hints.Title, ReadOnly: t.Hints.ReadOnly, Idempotent: t.Hints.Idempotent,
			Destructive: t.Hints.Destructive, OpenWorld: t.Hints.OpenWorld},
		Params: paramsPB(t.Params), Results: paramsPB(t.Results),
	}
}

// withTool is the inverse of toolPB: it makes s a tool entry when the API
// says it is one.
func withTool(s *skill.Skill, kind routerv1.EntryKind, t *routerv1.ToolInfo, trust routerv1.Trust) {
	if kind != routerv1.EntryKind_ENTRY_KIND_TOOL || t == nil {
		return
	}
	h := t.GetHints()
	s.Kind = skill.EntryTool
	s.Tool = &skill.Tool{
		Server: t.GetServer(), Name: t.GetUpstreamName(), Title: t.GetTitle(), InputSchema: json.RawMessage(t.GetInputSchema()),
		Trusted: trusted(trust), Agents: t.GetAgents(),
		Hints: skill.ToolHints{Title: h.GetTitle(), ReadOnly: h.GetReadOnly(), Idempotent: h.GetIdempotent(),
			Destructive: h.Destructive, OpenWorld: h.OpenWorld},
		Params: params(t.GetParams()), Results: params(t.GetResults()),
	}
	if s.ContentHash == "" {
		s.ContentHash = t.GetDefinitionSha256()
	}
}

func paramsPB(ps []skill.ToolParam) []*routerv1.ToolParam {
	var out []*routerv1.ToolParam
	for _, p := range ps {
		out = append(out, &routerv1.ToolParam{Name: p.Name, Description: p.Description, Type: p.Type, Required: p.Required})
	}
	return out
}

func params(ps []*routerv1.ToolParam) []skill.ToolParam {
	var out []skill.ToolParam
	for _, p := range ps {
		out = append(out, skill.ToolParam{Name: p.GetName(), Description: p.GetDescription(), Type: p.GetType(), Required: p.GetRequired()})
	}
	return out
}

// DetailPB describes the entry ent in full.
func DetailPB(ent *skill.Entry) *routerv1.SkillDetail {
	s := ent.Skill
	d := &routerv1.SkillDetail{
		Name: s.Name, Frontmatter: frontmatterPB(s.Frontmatter), Source: sourcePB(s), Precedence: int32(ent.Rank),
		ContentSha256: s.ContentHash, FrontmatterSha256: s.FrontmatterHash,
		Resources: resourcesPB(s.Resources), ResourcesTruncated: s.ResourcesTruncated, Problems: problemsPB(s.Problems),
		Enabled: s.Enabled(), DisabledReason: s.DisabledReason(), Owner: s.Registry.Owner, Trust: trustPB(s.Trusted()),
		SizeBytes: s.Size, Modified: timestamppb.New(s.ModTime), BodyTokens: int32(s.BodyTokens),
		ModelInvocable: s.Enabled() && !s.Frontmatter.DisableModelInvocation,
		Kind:           entryKindPB(s), Tool: toolPB(s),
	}
	for _, sh := range ent.Shadows {
		d.Shadows = append(d.Shadows, sourcePB(sh.Skill))
	}
	if ent.ShadowedBy != nil {
		d.ShadowedBy = sourcePB(ent.ShadowedBy.Skill)
	}
	return d
}

// Entry is the inverse of DetailPB.
func Entry(d *routerv1.SkillDetail) *skill.Entry {
	e := &skill.Entry{Skill: detail(d), Rank: int(d.GetPrecedence())}
	if sb := d.GetShadowedBy(); sb != nil {
		e.ShadowedBy = &skill.Entry{Skill: named(source(sb), e.Skill.Name)}
	}
	for _, sh := range d.GetShadows() {
		e.Shadows = append(e.Shadows, &skill.Entry{Skill: named(source(sh), e.Skill.Name)})
	}
	return e
}

// detail is the skill a detail describes.
func detail(d *routerv1.SkillDetail) *skill.Skill {
	out := source(d.GetSource())
	if out == nil {
		out = &skill.Skill{}
	}
	out.Name = d.GetName()
	if f := d.GetFrontmatter(); f != nil {
		out.Frontmatter = frontmatter(f)
	}
	out.ContentHash, out.FrontmatterHash = d.GetContentSha256(), d.GetFrontmatterSha256()
	withTool(out, d.GetKind(), d.GetTool(), d.GetTrust())
	out.Resources = resources(d.GetResources())
	out.ResourcesTruncated = d.GetResourcesTruncated()
	out.Size, out.BodyTokens = d.GetSizeBytes(), int(d.GetBodyTokens())
	if m := d.GetModified(); m != nil {
		out.ModTime = m.AsTime()
	}
	out.Registry = skill.RegistryEntry{Owner: d.GetOwner()}
	if out.Oversize = skill.OversizeOf(d.GetDisabledReason()); !d.GetEnabled() && out.Oversize == "" {
		no := false
		out.Registry.Enabled = &no
		// The API carries the reason as text: "disabled by SOURCE (enabled: false)".
		src, ok := strings.CutPrefix(d.GetDisabledReason(), "disabled by ")
		if ok {
			src, _ = strings.CutSuffix(src, " (enabled: false)")
		}
		out.Registry.Source = src
	}
	out.Problems = problems(d.GetProblems())
	return out
}

func frontmatterPB(f skill.Frontmatter) *routerv1.Frontmatter {
	return &routerv1.Frontmatter{
		Name: f.Name, Description: f.Description, License: f.License, Compatibility: f.Compatibility,
		Metadata: f.Metadata, AllowedTools: f.AllowedTools, Triggers: f.Triggers, Tags: f.Tags, Hidden: f.Hidden,
		DisableModelInvocation: f.DisableModelInvocation, UserInvocable: f.UserInvocable, Extra: f.Extra,
	}
}

func frontmatter(f *routerv1.Frontmatter) skill.Frontmatter {
	out := skill.Frontmatter{
		Name: f.GetName(), Description: f.GetDescription(), License: f.GetLicense(), Compatibility: f.GetCompatibility(),
		Metadata: f.GetMetadata(), AllowedTools: f.GetAllowedTools(), Triggers: f.GetTriggers(), Tags: f.GetTags(),
		Hidden: f.GetHidden(), DisableModelInvocation: f.GetDisableModelInvocation(), Extra: f.GetExtra(),
	}
	if f.UserInvocable != nil {
		v := f.GetUserInvocable()
		out.UserInvocable = &v
	}
	return out
}

func problemsPB(ps []skill.Problem) []*routerv1.Problem {
	out := make([]*routerv1.Problem, 0, len(ps))
	for _, p := range ps {
		out = append(out, &routerv1.Problem{
			Severity: severityPB(p.Severity), Code: p.Code, Field: p.Field, File: validText(p.File), Line: int32(p.Line), Message: validText(p.Message),
		})
	}
	return out
}

func problems(ps []*routerv1.Problem) []skill.Problem {
	var out []skill.Problem
	for _, p := range ps {
		out = append(out, skill.Problem{
			Severity: severity(p.GetSeverity()), Code: p.GetCode(), Field: p.GetField(), File: p.GetFile(), Line: int(p.GetLine()), Message: p.GetMessage(),
		})
	}
	return out
}

func resourcesPB(rs []skill.Resource) []*routerv1.Resource {
	out := make([]*routerv1.Resource, 0, len(rs))
	for _, r := range rs {
		out = append(out, &routerv1.Resource{Path: validText(r.Path), SizeBytes: r.Size})
	}
	return out
}

func resources(rs []*routerv1.Resource) []skill.Resource {
	var out []skill.Resource
	for _, r := range rs {
		out = append(out, skill.Resource{Path: r.GetPath(), Size: r.GetSizeBytes()})
	}
	return out
}

func shadowsPB(shadows []skill.Shadow) []*routerv1.ShadowedSkill {
	out := make([]*routerv1.ShadowedSkill, 0, len(shadows))
	for _, s := range shadows {
		out = append(out, &routerv1.ShadowedSkill{Name: s.Name, Winner: sourcePB(s.Winner), Shadowed: sourcePB(s.Loser), Reason: s.Reason})
	}
	return out
}

func shadows(ss []*routerv1.ShadowedSkill) []skill.Shadow {
	var out []skill.Shadow
	for _, s := range ss {
		out = append(out, skill.Shadow{
			Name: s.GetName(), Winner: named(source(s.GetWinner()), s.GetName()), Loser: named(source(s.GetShadowed()), s.GetName()),
			Reason: s.GetReason(), Agent: s.GetWinner().GetAgent(),
		})
	}
	return out
}
