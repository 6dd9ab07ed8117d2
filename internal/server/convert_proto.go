package server

import (
	"cmp"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

var sourceKinds = map[skill.SourceKind]routerv1.SourceKind{
	skill.KindProject: routerv1.SourceKind_SOURCE_KIND_PROJECT,
	skill.KindUser:    routerv1.SourceKind_SOURCE_KIND_USER,
	skill.KindLearned: routerv1.SourceKind_SOURCE_KIND_LEARNED,
	skill.KindBundled: routerv1.SourceKind_SOURCE_KIND_BUNDLED,
	skill.KindServer:  routerv1.SourceKind_SOURCE_KIND_MCP_SERVER,
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
		Kind:        kindPB(s),
		Tool:        toolPB(s),
	}
}

func kindPB(s *skill.Skill) routerv1.EntryKind {
	if s.IsTool() {
		return routerv1.EntryKind_ENTRY_KIND_TOOL
	}
	return routerv1.EntryKind_ENTRY_KIND_SKILL
}

// toolPB describes a tool entry; nil for a skill.
func toolPB(s *skill.Skill) *routerv1.ToolInfo {
	if !s.IsTool() {
		return nil
	}
	t := s.Tool
	out := &routerv1.ToolInfo{
		Server: t.Server, UpstreamName: t.Name, Title: t.Title, InputSchema: string(t.InputSchema),
		Agents: t.Agents, DefinitionSha256: s.ContentHash,
		Hints: &routerv1.ToolHints{Title: t.Hints.Title, ReadOnly: t.Hints.ReadOnly, Idempotent: t.Hints.Idempotent,
			Destructive: t.Hints.Destructive, OpenWorld: t.Hints.OpenWorld},
	}
	for _, p := range t.Params {
		out.Params = append(out.Params, &routerv1.ToolParam{Name: p.Name, Description: p.Description, Type: p.Type, Required: p.Required})
	}
	for _, p := range t.Results {
		out.Results = append(out.Results, &routerv1.ToolParam{Name: p.Name, Description: p.Description, Type: p.Type, Required: p.Required})
	}
	return out
}

var kindFiltersFromPB = map[routerv1.KindFilter]skill.KindFilter{
	routerv1.KindFilter_KIND_FILTER_UNSPECIFIED: "",
	routerv1.KindFilter_KIND_FILTER_BOTH:        skill.KindsBoth,
	routerv1.KindFilter_KIND_FILTER_SKILLS:      skill.KindsSkills,
	routerv1.KindFilter_KIND_FILTER_TOOLS:       skill.KindsTools,
}

// kindFilter converts a filter; a value this server does not know passes
// through by name so the domain's validation reports it.
func kindFilter(k routerv1.KindFilter) skill.KindFilter {
	if f, ok := kindFiltersFromPB[k]; ok {
		return f
	}
	return skill.KindFilter(k.String())
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

func detailPB(ent *skill.Entry) *routerv1.SkillDetail {
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
		DisabledReason:     s.DisabledReason(),
		Owner:              s.Registry.Owner,
		Trust:              trustPB(s),
		SizeBytes:          s.Size,
		Modified:           timestamppb.New(s.ModTime),
		BodyTokens:         int32(s.BodyTokens),
		ModelInvocable:     s.Enabled() && !s.Frontmatter.DisableModelInvocation,
		Kind:               kindPB(s),
		Tool:               toolPB(s),
	}
	for _, sh := range ent.Shadows {
		d.Shadows = append(d.Shadows, sourcePB(sh.Skill))
	}
	if ent.ShadowedBy != nil {
		d.ShadowedBy = sourcePB(ent.ShadowedBy.Skill)
	}
	return d
}

func shadowsPB(shadows []skill.Shadow) []*routerv1.ShadowedSkill {
	out := make([]*routerv1.ShadowedSkill, 0, len(shadows))
	for _, s := range shadows {
		out = append(out, &routerv1.ShadowedSkill{
			Name: s.Name, Winner: sourcePB(s.Winner), Shadowed: sourcePB(s.Loser), Reason: s.Reason,
		})
	}
	return out
}

func catalogPB(c *skill.RenderedCatalog) *routerv1.RenderedCatalog {
	if c == nil {
		return nil
	}
	return &routerv1.RenderedCatalog{
		Text: c.Text, Chars: int32(c.Chars), Budget: int32(c.Budget),
		Included: c.Included, Shortened: c.Shortened, Cut: c.Cut,
	}
}

func statsPB(st skill.ReindexStats) *routerv1.ReindexStats {
	out := &routerv1.ReindexStats{
		Scanned: int32(st.Scanned), Added: int32(st.Added), Changed: int32(st.Changed),
		Removed: int32(st.Removed), Unchanged: int32(st.Unchanged), Invalid: int32(st.Invalid),
		Parsed: int32(st.Parsed), Embedded: int32(st.Embedded), Duration: durationpb.New(st.Duration), IndexGeneration: st.Generation,
	}
	if !st.FinishedAt.IsZero() {
		out.FinishedAt = timestamppb.New(st.FinishedAt)
	}
	return out
}

func statusPB(st *skill.Status) *routerv1.StatusResponse {
	byCode := make(map[string]int32, len(st.ProblemsByCode))
	for k, v := range st.ProblemsByCode {
		byCode[k] = int32(v)
	}
	out := &routerv1.StatusResponse{
		Version:           st.Version,
		StartedAt:         timestamppb.New(st.StartedAt),
		Serving:           st.Serving,
		IndexGeneration:   st.Generation,
		GenerationId:      st.GenerationID,
		CatchingUp:        st.CatchingUp,
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
		Flags:      &routerv1.FeatureFlags{SkillsV1: st.Flags.SkillsV1, SkillsExec: st.Flags.SkillsExec, ToolsCall: st.Flags.ToolsCall},
		Agents:     st.Agents,
		Config:     &routerv1.ConfigStatus{Path: st.Config.Path, Error: st.Config.Error},
		Tools:      int32(st.Tools),
	}
	for _, sv := range st.Servers {
		out.Servers = append(out.Servers, serverPB(sv))
	}
	if !st.Config.LoadedAt.IsZero() {
		out.Config.LoadedAt = timestamppb.New(st.Config.LoadedAt)
	}
	out.Degraded, out.DegradedReason = st.Degraded, st.DegradedReason
	if m := st.Model; m != nil {
		out.Model = &routerv1.ModelStatus{
			Name: m.Name, Dimension: int32(m.Dimension), Fingerprint: m.Fingerprint,
			Path: m.Path, LoadDuration: durationpb.New(m.LoadDuration), QueryLatency: durationpb.New(m.QueryLatency),
			EmbeddingsComputed: m.EmbeddingsComputed, CacheEntries: int64(m.VectorsCached), MatchThreshold: m.MatchThreshold,
		}
	}
	return out
}

var serverStates = map[skill.ServerState]routerv1.ServerState{
	skill.ServerDisabled: routerv1.ServerState_SERVER_STATE_DISABLED,
	skill.ServerStarting: routerv1.ServerState_SERVER_STATE_STARTING,
	skill.ServerReady:    routerv1.ServerState_SERVER_STATE_READY,
	skill.ServerFailed:   routerv1.ServerState_SERVER_STATE_FAILED,
	skill.ServerStopped:  routerv1.ServerState_SERVER_STATE_STOPPED,
}

// timePB converts a time; nil for the zero time.
func timePB(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func serverPB(s skill.ServerStatus) *routerv1.ServerStatus {
	trust := routerv1.Trust_TRUST_UNTRUSTED
	if s.Trusted {
		trust = routerv1.Trust_TRUST_TRUSTED
	}
	return &routerv1.ServerStatus{
		Name: s.Name, Transport: s.Transport, Endpoint: s.Endpoint, State: serverStates[s.State], Trust: trust, Agents: s.Agents,
		Tools: int32(s.Tools), ToolsListed: int32(s.ToolsListed), ToolsFiltered: int32(s.ToolsFiltered), ToolsDropped: int32(s.ToolsDropped),
		Resources: int32(s.Resources), Prompts: int32(s.Prompts),
		ServerName: s.ServerName, ServerVersion: s.ServerVersion, ProtocolVersion: s.ProtocolVersion,
		LastError: s.LastError, LastErrorAt: timePB(s.LastErrorAt), ConnectedAt: timePB(s.ConnectedAt),
		ListedAt: timePB(s.ListedAt), NextAttempt: timePB(s.NextAttempt),
		Restarts: int32(s.Restarts), ListChanged: int32(s.ListChanged), Refreshes: int32(s.Refreshes),
		Diagnostics: s.Diagnostics, StderrTail: s.StderrTail,
	}
}

func callToolPB(r *skill.ToolResult) *routerv1.CallToolResponse {
	out := &routerv1.CallToolResponse{
		Name: r.Name, Server: r.Server, Tool: r.Tool, StructuredContent: string(r.StructuredContent),
		IsError: r.IsError, Truncated: r.Truncated, Framed: r.Framed, Bytes: int32(r.Bytes),
		Trust: routerv1.Trust_TRUST_UNTRUSTED, Duration: durationpb.New(r.Duration), DecisionId: r.DecisionID,
		IndexGeneration: r.Generation,
	}
	if r.Trusted {
		out.Trust = routerv1.Trust_TRUST_TRUSTED
	}
	for _, c := range r.Content {
		out.Content = append(out.Content, &routerv1.ToolContent{
			Type: c.Type, Text: c.Text, Data: c.Data, MimeType: c.MIMEType, Uri: c.URI, Name: c.Name, Description: c.Description,
		})
	}
	return out
}

func loadPB(r *skill.LoadResult) *routerv1.LoadResponse {
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

var denyReasons = map[skill.DenyReason]routerv1.ExecDenyReason{
	skill.DenyExecDisabled:   routerv1.ExecDenyReason_EXEC_DENY_REASON_EXEC_DISABLED,
	skill.DenyNotAllowlisted: routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_ALLOWLISTED,
	skill.DenyHashMismatch:   routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH,
	skill.DenyPathEscape:     routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE,
	skill.DenyNotFound:       routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND,
	skill.DenySkillDisabled:  routerv1.ExecDenyReason_EXEC_DENY_REASON_SKILL_DISABLED,
}

func execDecisionPB(d *skill.ExecDecision) *routerv1.AuthorizeExecResponse {
	out := &routerv1.AuthorizeExecResponse{
		Decision:     routerv1.ExecDecision_EXEC_DECISION_DENY,
		DenyReason:   denyReasons[d.Reason],
		Message:      d.Message,
		ScriptSha256: d.ScriptSHA256,
		DecisionId:   d.DecisionID,
	}
	if d.Allowed {
		out.Decision = routerv1.ExecDecision_EXEC_DECISION_ALLOW
	}
	return out
}

var fusionsFromPB = map[routerv1.Fusion]skill.Fusion{
	routerv1.Fusion_FUSION_TIEBREAK: skill.FusionTiebreak,
	routerv1.Fusion_FUSION_RRF:      skill.FusionRRF,
	routerv1.Fusion_FUSION_CONVEX:   skill.FusionConvex,
	routerv1.Fusion_FUSION_ADAPTIVE: skill.FusionAdaptive,
}

var modesFromPB = map[routerv1.MatchMode]skill.MatchMode{
	routerv1.MatchMode_MATCH_MODE_HYBRID: skill.ModeHybrid,
	routerv1.MatchMode_MATCH_MODE_DENSE:  skill.ModeDense,
	routerv1.MatchMode_MATCH_MODE_BM25:   skill.ModeKeyword,
}

// matchRequest converts a MatchRequest; enum values this server does not
// know pass through by name so the domain's validation reports them.
func matchRequest(req *routerv1.MatchRequest) skill.MatchRequest {
	o := req.GetOptions()
	mr := skill.MatchRequest{
		Task: req.GetTask(), TopK: int(req.GetTopK()), Agent: req.GetAgent(),
		Options: skill.MatchOptions{IncludeHidden: o.GetIncludeHidden(), Kinds: kindFilter(o.GetKinds())},
	}
	if f := o.GetFusion(); f != routerv1.Fusion_FUSION_UNSPECIFIED {
		mr.Options.Fusion = cmp.Or(fusionsFromPB[f], skill.Fusion(f.String()))
	}
	if m := o.GetMode(); m != routerv1.MatchMode_MATCH_MODE_UNSPECIFIED {
		mr.Options.Mode = cmp.Or(modesFromPB[m], skill.MatchMode(m.String()))
	}
	if o != nil && o.Threshold != nil {
		t := o.GetThreshold()
		mr.Options.Threshold = &t
	}
	return mr
}

var abstainReasons = map[skill.AbstainReason]routerv1.AbstainReason{
	skill.AbstainBelowThreshold: routerv1.AbstainReason_ABSTAIN_REASON_BELOW_THRESHOLD,
	skill.AbstainCalibrated:     routerv1.AbstainReason_ABSTAIN_REASON_CALIBRATED,
	skill.AbstainDisabled:       routerv1.AbstainReason_ABSTAIN_REASON_DISABLED,
	skill.AbstainNoSkills:       routerv1.AbstainReason_ABSTAIN_REASON_NO_SKILLS,
	skill.AbstainNoMatch:        routerv1.AbstainReason_ABSTAIN_REASON_NO_MATCH,
}

var verdictsPB = map[skill.Verdict]routerv1.MatchVerdict{
	skill.VerdictConfident:     routerv1.MatchVerdict_MATCH_VERDICT_CONFIDENT,
	skill.VerdictLowConfidence: routerv1.MatchVerdict_MATCH_VERDICT_LOW_CONFIDENCE,
	skill.VerdictNoSkill:       routerv1.MatchVerdict_MATCH_VERDICT_NO_SKILL,
}

func matchPB(r *skill.MatchResult) *routerv1.MatchResponse {
	out := &routerv1.MatchResponse{
		Verdict:         verdictsPB[r.Verdict],
		VerdictDetail:   r.VerdictDetail,
		Abstained:       r.Abstained,
		AbstainReason:   abstainReasons[r.AbstainReason],
		AbstainDetail:   r.AbstainDetail,
		IndexGeneration: r.Generation,
		GenerationId:    r.GenerationID,
		Degraded:        r.Degraded,
	}
	for pb, m := range modesFromPB {
		if m == r.Mode {
			out.Mode = pb
		}
	}
	for pb, f := range fusionsFromPB {
		if f == r.Fusion {
			out.Fusion = pb
		}
	}
	for _, c := range r.Candidates {
		out.Candidates = append(out.Candidates, &routerv1.Candidate{
			Skill: summaryPB(c.Skill),
			Scores: &routerv1.Scores{
				Cosine: c.Cosine, Bm25: c.BM25, Fused: c.Fused,
				DenseRank: int32(c.DenseRank), Bm25Rank: int32(c.BM25Rank), TriggerBoost: c.TriggerBoost,
			},
			TriggersFired: c.TriggersFired,
			NameMentioned: c.NameMentioned,
			Reason:        c.Reason,
		})
	}
	return out
}

func manifestPB(m *skill.Manifest) *routerv1.SkillManifest {
	if m == nil {
		return nil
	}
	out := &routerv1.SkillManifest{FrontmatterJson: string(m.Frontmatter), Files: make([]*routerv1.FileDigest, 0, len(m.Files))}
	for _, f := range m.Files {
		out.Files = append(out.Files, &routerv1.FileDigest{Path: f.Path, SizeBytes: f.Size, Sha256: f.SHA256})
	}
	return out
}
