package remote

import (
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// Requests: domain to proto.

var modesPB = map[skill.MatchMode]routerv1.MatchMode{
	"":                routerv1.MatchMode_MATCH_MODE_UNSPECIFIED,
	skill.ModeHybrid:  routerv1.MatchMode_MATCH_MODE_HYBRID,
	skill.ModeDense:   routerv1.MatchMode_MATCH_MODE_DENSE,
	skill.ModeKeyword: routerv1.MatchMode_MATCH_MODE_BM25,
}

var fusionsPB = map[skill.Fusion]routerv1.Fusion{
	"":                   routerv1.Fusion_FUSION_UNSPECIFIED,
	skill.FusionTiebreak: routerv1.Fusion_FUSION_TIEBREAK,
	skill.FusionRRF:      routerv1.Fusion_FUSION_RRF,
	skill.FusionConvex:   routerv1.Fusion_FUSION_CONVEX,
	skill.FusionAdaptive: routerv1.Fusion_FUSION_ADAPTIVE,
}

func matchRequestPB(req skill.MatchRequest) (*routerv1.MatchRequest, error) {
	topK, err := int32Of(skill.FieldTopK, req.TopK)
	if err != nil {
		return nil, err
	}
	mode, ok := modesPB[req.Options.Mode]
	if !ok {
		return nil, skill.InvalidArgument(skill.FieldMode, "%q is not a match mode; want hybrid, dense or bm25", skill.Clip(string(req.Options.Mode), 40))
	}
	fusion, ok := fusionsPB[req.Options.Fusion]
	if !ok {
		return nil, skill.InvalidArgument(skill.FieldFusion, "%q is not a fusion rule; want tiebreak, rrf, convex or adaptive", skill.Clip(string(req.Options.Fusion), 40))
	}
	kinds, err := kindFilterPB(skill.FieldKinds, req.Options.Kinds)
	if err != nil {
		return nil, err
	}
	out := &routerv1.MatchRequest{Task: req.Task, TopK: topK, Agent: req.Agent, Options: &routerv1.MatchOptions{
		Mode: mode, Fusion: fusion, IncludeHidden: req.Options.IncludeHidden, Kinds: kinds,
	}}
	if t := req.Options.Threshold; t != nil {
		v := *t
		out.Options.Threshold = &v
	}
	return out, nil
}

func listRequestPB(req skill.ListRequest) (*routerv1.ListSkillsRequest, error) {
	size, err := int32Of(skill.FieldPageSize, req.PageSize)
	if err != nil {
		return nil, err
	}
	budget, err := int32Of(skill.FieldCatalogCharBudget, req.CatalogBudget)
	if err != nil {
		return nil, err
	}
	kinds, err := kindFilterPB(skill.FieldListKinds, req.Kinds)
	if err != nil {
		return nil, err
	}
	return &routerv1.ListSkillsRequest{
		Agent: req.Agent, PageSize: size, PageToken: req.PageToken, IncludeHidden: req.IncludeHidden,
		IncludeDisabled: req.IncludeDisabled, CatalogCharBudget: budget, Kinds: kinds,
	}, nil
}

var kindFiltersPB = map[skill.KindFilter]routerv1.KindFilter{
	"":                routerv1.KindFilter_KIND_FILTER_UNSPECIFIED,
	skill.KindsBoth:   routerv1.KindFilter_KIND_FILTER_BOTH,
	skill.KindsSkills: routerv1.KindFilter_KIND_FILTER_SKILLS,
	skill.KindsTools:  routerv1.KindFilter_KIND_FILTER_TOOLS,
}

func kindFilterPB(field string, k skill.KindFilter) (routerv1.KindFilter, error) {
	pb, ok := kindFiltersPB[k]
	if !ok {
		return 0, skill.InvalidArgument(field, "%q is not a kind filter; want skills, tools or both", skill.Clip(string(k), 40))
	}
	return pb, nil
}

func loadRequestPB(req skill.LoadRequest) (*routerv1.LoadRequest, error) {
	level, err := int32Of(skill.FieldLevel, int(req.Level))
	if err != nil {
		return nil, err
	}
	budget, err := int32Of(skill.FieldTokenBudget, req.TokenBudget)
	if err != nil {
		return nil, err
	}
	return &routerv1.LoadRequest{
		Name: req.Name, Agent: req.Agent, Level: routerv1.LoadLevel(level), ResourcePath: req.ResourcePath,
		TokenBudget: budget, Raw: req.Raw,
	}, nil
}

func execReportPB(req skill.ExecReport) (*routerv1.ReportExecResultRequest, error) {
	code, err := int32Of("exit_code", req.ExitCode)
	if err != nil {
		return nil, err
	}
	return &routerv1.ReportExecResultRequest{
		DecisionId: req.DecisionID, Skill: req.Skill, Script: req.Script, ExitCode: code,
		Duration: durationpb.New(req.Duration), Error: req.Error, Caller: req.Caller,
	}, nil
}

// Answers: proto to domain.

var kinds = map[routerv1.SourceKind]skill.SourceKind{
	routerv1.SourceKind_SOURCE_KIND_PROJECT:    skill.KindProject,
	routerv1.SourceKind_SOURCE_KIND_USER:       skill.KindUser,
	routerv1.SourceKind_SOURCE_KIND_LEARNED:    skill.KindLearned,
	routerv1.SourceKind_SOURCE_KIND_BUNDLED:    skill.KindBundled,
	routerv1.SourceKind_SOURCE_KIND_MCP_SERVER: skill.KindServer,
}

// fromSource is the skill a SkillSource locates, with nothing else known.
func fromSource(src *routerv1.SkillSource) *skill.Skill {
	if src == nil {
		return nil
	}
	return &skill.Skill{
		Root:    skill.Root{Kind: kinds[src.GetKind()], Display: src.GetRoot(), Agent: src.GetAgent()},
		RelPath: src.GetPath(),
	}
}

// fromSummary is a skill as a level-1 summary describes it: name,
// description, tags and source. The API's summary does not carry the other
// frontmatter fields (hidden, user-invocable and the rest).
func fromSummary(s *routerv1.SkillSummary) *skill.Skill {
	if s == nil {
		return nil
	}
	out := fromSource(s.GetSource())
	if out == nil {
		out = &skill.Skill{}
	}
	out.Name = s.GetName()
	out.Frontmatter = skill.Frontmatter{Name: s.GetName(), Description: s.GetDescription(), Tags: s.GetTags()}
	withTool(out, s.GetKind(), s.GetTool(), s.GetTrust())
	return out
}

// withTool makes s a tool entry when the API says it is one.
func withTool(s *skill.Skill, kind routerv1.EntryKind, t *routerv1.ToolInfo, trust routerv1.Trust) {
	if kind != routerv1.EntryKind_ENTRY_KIND_TOOL || t == nil {
		return
	}
	s.Kind = skill.EntryTool
	s.Tool = &skill.Tool{
		Server: t.GetServer(), Name: t.GetUpstreamName(), Title: t.GetTitle(), InputSchema: json.RawMessage(t.GetInputSchema()),
		Trusted: trust == routerv1.Trust_TRUST_TRUSTED, Agents: t.GetAgents(),
		Hints: skill.ToolHints{Title: t.GetHints().GetTitle(), ReadOnly: t.GetHints().GetReadOnly(), Idempotent: t.GetHints().GetIdempotent(),
			Destructive: t.GetHints().Destructive, OpenWorld: t.GetHints().OpenWorld},
	}
	for _, p := range t.GetParams() {
		s.Tool.Params = append(s.Tool.Params, skill.ToolParam{Name: p.GetName(), Description: p.GetDescription(), Type: p.GetType(), Required: p.GetRequired()})
	}
	for _, p := range t.GetResults() {
		s.Tool.Results = append(s.Tool.Results, skill.ToolParam{Name: p.GetName(), Description: p.GetDescription(), Type: p.GetType(), Required: p.GetRequired()})
	}
	if s.ContentHash == "" {
		s.ContentHash = t.GetDefinitionSha256()
	}
}

func fromDetail(d *routerv1.SkillDetail) *skill.Skill {
	out := fromSource(d.GetSource())
	if out == nil {
		out = &skill.Skill{}
	}
	out.Name = d.GetName()
	if f := d.GetFrontmatter(); f != nil {
		out.Frontmatter = skill.Frontmatter{
			Name: f.GetName(), Description: f.GetDescription(), License: f.GetLicense(), Compatibility: f.GetCompatibility(),
			Metadata: f.GetMetadata(), AllowedTools: f.GetAllowedTools(), Triggers: f.GetTriggers(), Tags: f.GetTags(),
			Hidden: f.GetHidden(), DisableModelInvocation: f.GetDisableModelInvocation(), Extra: f.GetExtra(),
		}
		if f.UserInvocable != nil {
			v := f.GetUserInvocable()
			out.Frontmatter.UserInvocable = &v
		}
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
	if !d.GetEnabled() {
		no := false
		out.Registry.Enabled = &no
		// The API carries the reason as text: "disabled by SOURCE (enabled: false)".
		src, ok := strings.CutPrefix(d.GetDisabledReason(), "disabled by ")
		if ok {
			src, _ = strings.CutSuffix(src, " (enabled: false)")
		}
		out.Registry.Source = src
	}
	for _, p := range d.GetProblems() {
		sev := skill.SeverityWarning
		if p.GetSeverity() == routerv1.Severity_SEVERITY_ERROR {
			sev = skill.SeverityError
		}
		out.Problems = append(out.Problems, skill.Problem{
			Severity: sev, Code: p.GetCode(), Field: p.GetField(), File: p.GetFile(), Line: int(p.GetLine()), Message: p.GetMessage(),
		})
	}
	return out
}

func entry(d *routerv1.SkillDetail) *skill.Entry {
	e := &skill.Entry{Skill: fromDetail(d), Rank: int(d.GetPrecedence())}
	if sb := d.GetShadowedBy(); sb != nil {
		e.ShadowedBy = &skill.Entry{Skill: named(fromSource(sb), e.Skill.Name)}
	}
	for _, sh := range d.GetShadows() {
		e.Shadows = append(e.Shadows, &skill.Entry{Skill: named(fromSource(sh), e.Skill.Name)})
	}
	return e
}

// named gives a skill located by its source the name it shares.
func named(s *skill.Skill, name string) *skill.Skill {
	if s != nil {
		s.Name = name
	}
	return s
}

func resources(rs []*routerv1.Resource) []skill.Resource {
	var out []skill.Resource
	for _, r := range rs {
		out = append(out, skill.Resource{Path: r.GetPath(), Size: r.GetSizeBytes()})
	}
	return out
}

func manifest(m *routerv1.SkillManifest) *skill.Manifest {
	out := &skill.Manifest{Frontmatter: []byte(m.GetFrontmatterJson()), Files: make([]skill.FileDigest, 0, len(m.GetFiles()))}
	for _, f := range m.GetFiles() {
		out.Files = append(out.Files, skill.FileDigest{Path: f.GetPath(), Size: f.GetSizeBytes(), SHA256: f.GetSha256()})
	}
	return out
}

func shadows(ss []*routerv1.ShadowedSkill) []skill.Shadow {
	var out []skill.Shadow
	for _, s := range ss {
		w := named(fromSource(s.GetWinner()), s.GetName())
		out = append(out, skill.Shadow{
			Name: s.GetName(), Winner: w, Loser: named(fromSource(s.GetShadowed()), s.GetName()), Reason: s.GetReason(),
			Agent: s.GetWinner().GetAgent(),
		})
	}
	return out
}

var abstainReasons = map[routerv1.AbstainReason]skill.AbstainReason{
	routerv1.AbstainReason_ABSTAIN_REASON_BELOW_THRESHOLD: skill.AbstainBelowThreshold,
	routerv1.AbstainReason_ABSTAIN_REASON_CALIBRATED:      skill.AbstainCalibrated,
	routerv1.AbstainReason_ABSTAIN_REASON_DISABLED:        skill.AbstainDisabled,
	routerv1.AbstainReason_ABSTAIN_REASON_NO_SKILLS:       skill.AbstainNoSkills,
	routerv1.AbstainReason_ABSTAIN_REASON_NO_MATCH:        skill.AbstainNoMatch,
}

var verdicts = map[routerv1.MatchVerdict]skill.Verdict{
	routerv1.MatchVerdict_MATCH_VERDICT_CONFIDENT:      skill.VerdictConfident,
	routerv1.MatchVerdict_MATCH_VERDICT_LOW_CONFIDENCE: skill.VerdictLowConfidence,
	routerv1.MatchVerdict_MATCH_VERDICT_NO_SKILL:       skill.VerdictNoSkill,
}

func matchResult(r *routerv1.MatchResponse) *skill.MatchResult {
	out := &skill.MatchResult{
		Verdict: verdicts[r.GetVerdict()], VerdictDetail: r.GetVerdictDetail(),
		Abstained: r.GetAbstained(), AbstainReason: abstainReasons[r.GetAbstainReason()], AbstainDetail: r.GetAbstainDetail(),
		Generation: r.GetIndexGeneration(), GenerationID: r.GetGenerationId(), Degraded: r.GetDegraded(),
	}
	for m, pb := range modesPB {
		if pb == r.GetMode() && m != "" {
			out.Mode = m
		}
	}
	for f, pb := range fusionsPB {
		if pb == r.GetFusion() && f != "" {
			out.Fusion = f
		}
	}
	for _, c := range r.GetCandidates() {
		sc := c.GetScores()
		out.Candidates = append(out.Candidates, skill.Candidate{
			Skill: fromSummary(c.GetSkill()), Cosine: sc.GetCosine(), BM25: sc.GetBm25(), Fused: sc.GetFused(),
			DenseRank: int(sc.GetDenseRank()), BM25Rank: int(sc.GetBm25Rank()), TriggerBoost: sc.GetTriggerBoost(),
			TriggersFired: c.GetTriggersFired(), NameMentioned: c.GetNameMentioned(), Reason: c.GetReason(),
		})
	}
	return out
}

func listResult(r *routerv1.ListSkillsResponse) *skill.ListResult {
	out := &skill.ListResult{
		NextPageToken: r.GetNextPageToken(), Total: int(r.GetTotalSize()), Shadowed: shadows(r.GetShadowed()),
		Generation: r.GetIndexGeneration(),
	}
	for _, s := range r.GetSkills() {
		out.Skills = append(out.Skills, fromSummary(s))
	}
	if c := r.GetCatalog(); c != nil {
		out.Catalog = &skill.RenderedCatalog{
			Text: c.GetText(), Chars: int(c.GetChars()), Budget: int(c.GetBudget()),
			Included: c.GetIncluded(), Shortened: c.GetShortened(), Cut: c.GetCut(),
		}
	}
	return out
}

func loadResult(r *routerv1.LoadResponse) *skill.LoadResult {
	s := fromSummary(r.GetSummary())
	if s == nil {
		s = &skill.Skill{Name: r.GetName(), Frontmatter: skill.Frontmatter{Name: r.GetName()}}
		if src := fromSource(r.GetProvenance().GetSource()); src != nil {
			s.Root, s.RelPath = src.Root, src.RelPath
		}
	}
	s.Resources = resources(r.GetResources())
	return &skill.LoadResult{
		Skill: s, Level: skill.LoadLevel(r.GetLevel()), Content: r.GetContent(), Data: r.GetData(),
		Framed: r.GetFramed(), Truncated: r.GetTruncated(),
		Tokens: int(r.GetTokens()), TotalTokens: int(r.GetTotalTokens()), TokenBudget: int(r.GetTokenBudget()),
		SHA256: r.GetProvenance().GetSha256(), ResourcePath: r.GetResourcePath(), Size: r.GetSizeBytes(), MediaType: r.GetMediaType(),
	}
}

func reindexStats(s *routerv1.ReindexStats) skill.ReindexStats {
	out := skill.ReindexStats{
		Scanned: int(s.GetScanned()), Added: int(s.GetAdded()), Changed: int(s.GetChanged()), Removed: int(s.GetRemoved()),
		Unchanged: int(s.GetUnchanged()), Invalid: int(s.GetInvalid()), Parsed: int(s.GetParsed()), Embedded: int(s.GetEmbedded()),
		Duration: s.GetDuration().AsDuration(), Generation: s.GetIndexGeneration(),
	}
	if f := s.GetFinishedAt(); f != nil {
		out.FinishedAt = f.AsTime()
	}
	// The API does not say whether the pass published; a pass that found a
	// change did.
	out.Published = out.Added+out.Changed+out.Removed > 0
	return out
}

func statusResult(r *routerv1.StatusResponse) *skill.Status {
	out := &skill.Status{
		Version: r.GetVersion(), Serving: r.GetServing(), Generation: r.GetIndexGeneration(), GenerationID: r.GetGenerationId(),
		CatchingUp: r.GetCatchingUp(), Skills: int(r.GetSkills()), Disabled: int(r.GetSkillsDisabled()), Hidden: int(r.GetSkillsHidden()),
		Shadowed: int(r.GetSkillsShadowed()), AgentScoped: int(r.GetSkillsAgentScoped()), FilesInvalid: int(r.GetFilesInvalid()),
		Agents: r.GetAgents(), Shadows: shadows(r.GetShadowed()), LastStats: reindexStats(r.GetLastReindex()),
		LastReindexError: r.GetLastReindexError(),
		Progress: skill.Progress{
			Running: r.GetReindexProgress().GetRunning(), Phase: r.GetReindexProgress().GetPhase(),
			Done: int(r.GetReindexProgress().GetDone()), Total: int(r.GetReindexProgress().GetTotal()),
		},
		Errors: int(r.GetValidation().GetErrors()), Warnings: int(r.GetValidation().GetWarnings()),
		Flags:    skill.Flags{SkillsV1: r.GetFlags().GetSkillsV1(), SkillsExec: r.GetFlags().GetSkillsExec(), ToolsCall: r.GetFlags().GetToolsCall()},
		Tools:    int(r.GetTools()),
		Config:   skill.ConfigState{Path: r.GetConfig().GetPath(), Error: r.GetConfig().GetError()},
		Degraded: r.GetDegraded(), DegradedReason: r.GetDegradedReason(),
	}
	if t := r.GetStartedAt(); t != nil {
		out.StartedAt = t.AsTime()
	}
	for _, sv := range r.GetServers() {
		out.Servers = append(out.Servers, serverStatus(sv))
	}
	// The API reports the pass that built the generation, not later passes
	// that changed nothing.
	out.LastReindex = out.LastStats.FinishedAt
	if t := r.GetConfig().GetLoadedAt(); t != nil {
		out.Config.LoadedAt = t.AsTime()
	}
	if by := r.GetValidation().GetByCode(); len(by) > 0 {
		out.ProblemsByCode = make(map[string]int, len(by))
		for k, v := range by {
			out.ProblemsByCode[k] = int(v)
		}
	}
	if m := r.GetModel(); m != nil {
		out.Model = &skill.ModelStatus{
			Name: m.GetName(), Dimension: int(m.GetDimension()), Fingerprint: m.GetFingerprint(), Path: m.GetPath(),
			LoadDuration: m.GetLoadDuration().AsDuration(), QueryLatency: m.GetQueryLatency().AsDuration(),
			EmbeddingsComputed: m.GetEmbeddingsComputed(), VectorsCached: int(m.GetCacheEntries()), MatchThreshold: m.GetMatchThreshold(),
		}
	}
	return out
}

var denyReasons = map[routerv1.ExecDenyReason]skill.DenyReason{
	routerv1.ExecDenyReason_EXEC_DENY_REASON_EXEC_DISABLED:   skill.DenyExecDisabled,
	routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_ALLOWLISTED: skill.DenyNotAllowlisted,
	routerv1.ExecDenyReason_EXEC_DENY_REASON_HASH_MISMATCH:   skill.DenyHashMismatch,
	routerv1.ExecDenyReason_EXEC_DENY_REASON_PATH_ESCAPE:     skill.DenyPathEscape,
	routerv1.ExecDenyReason_EXEC_DENY_REASON_NOT_FOUND:       skill.DenyNotFound,
	routerv1.ExecDenyReason_EXEC_DENY_REASON_SKILL_DISABLED:  skill.DenySkillDisabled,
}

func execDecision(r *routerv1.AuthorizeExecResponse) *skill.ExecDecision {
	d := &skill.ExecDecision{
		Allowed: r.GetDecision() == routerv1.ExecDecision_EXEC_DECISION_ALLOW, Message: r.GetMessage(),
		ScriptSHA256: r.GetScriptSha256(), DecisionID: r.GetDecisionId(),
	}
	if !d.Allowed {
		d.Reason = denyReasons[r.GetDenyReason()]
	}
	return d
}

var serverStates = map[routerv1.ServerState]skill.ServerState{
	routerv1.ServerState_SERVER_STATE_DISABLED: skill.ServerDisabled,
	routerv1.ServerState_SERVER_STATE_STARTING: skill.ServerStarting,
	routerv1.ServerState_SERVER_STATE_READY:    skill.ServerReady,
	routerv1.ServerState_SERVER_STATE_FAILED:   skill.ServerFailed,
	routerv1.ServerState_SERVER_STATE_STOPPED:  skill.ServerStopped,
}

func timeOf(t interface{ AsTime() time.Time }, set bool) time.Time {
	if !set {
		return time.Time{}
	}
	return t.AsTime()
}

func serverStatus(s *routerv1.ServerStatus) skill.ServerStatus {
	return skill.ServerStatus{
		Name: s.GetName(), Transport: s.GetTransport(), Endpoint: s.GetEndpoint(), State: serverStates[s.GetState()],
		Trusted: s.GetTrust() == routerv1.Trust_TRUST_TRUSTED, Agents: s.GetAgents(),
		Tools: int(s.GetTools()), ToolsListed: int(s.GetToolsListed()), ToolsFiltered: int(s.GetToolsFiltered()),
		ToolsDropped: int(s.GetToolsDropped()), Resources: int(s.GetResources()), Prompts: int(s.GetPrompts()),
		ServerName: s.GetServerName(), ServerVersion: s.GetServerVersion(), ProtocolVersion: s.GetProtocolVersion(),
		LastError:   s.GetLastError(),
		LastErrorAt: timeOf(s.GetLastErrorAt(), s.GetLastErrorAt() != nil),
		ConnectedAt: timeOf(s.GetConnectedAt(), s.GetConnectedAt() != nil),
		ListedAt:    timeOf(s.GetListedAt(), s.GetListedAt() != nil),
		NextAttempt: timeOf(s.GetNextAttempt(), s.GetNextAttempt() != nil),
		Restarts:    int(s.GetRestarts()), ListChanged: int(s.GetListChanged()), Refreshes: int(s.GetRefreshes()),
		Diagnostics: s.GetDiagnostics(), StderrTail: s.GetStderrTail(),
	}
}

func callToolResult(r *routerv1.CallToolResponse) *skill.ToolResult {
	out := &skill.ToolResult{
		Name: r.GetName(), Server: r.GetServer(), Tool: r.GetTool(), IsError: r.GetIsError(), Truncated: r.GetTruncated(),
		Framed: r.GetFramed(), Bytes: int(r.GetBytes()), Trusted: r.GetTrust() == routerv1.Trust_TRUST_TRUSTED,
		Duration: r.GetDuration().AsDuration(), DecisionID: r.GetDecisionId(), Generation: r.GetIndexGeneration(),
	}
	if sc := r.GetStructuredContent(); sc != "" {
		out.StructuredContent = json.RawMessage(sc)
	}
	for _, c := range r.GetContent() {
		out.Content = append(out.Content, skill.ToolContent{
			Type: c.GetType(), Text: c.GetText(), Data: c.GetData(), MIMEType: c.GetMimeType(),
			URI: c.GetUri(), Name: c.GetName(), Description: c.GetDescription(),
		})
	}
	return out
}
