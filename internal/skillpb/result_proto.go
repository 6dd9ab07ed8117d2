package skillpb

import (
	"encoding/json"

	"google.golang.org/protobuf/types/known/durationpb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// MatchResultPB carries a match's answer.
func MatchResultPB(r *skill.MatchResult) *routerv1.MatchResponse {
	out := &routerv1.MatchResponse{
		Verdict: verdicts.toPB[r.Verdict], VerdictDetail: r.VerdictDetail,
		Abstained: r.Abstained, AbstainReason: abstainReasons.toPB[r.AbstainReason], AbstainDetail: r.AbstainDetail,
		IndexGeneration: r.Generation, GenerationId: r.GenerationID, Degraded: r.Degraded,
		Mode: modes.toPB[r.Mode], Fusion: fusions.toPB[r.Fusion],
	}
	for _, c := range r.Candidates {
		out.Candidates = append(out.Candidates, &routerv1.Candidate{
			Skill: SummaryPB(c.Skill),
			Scores: &routerv1.Scores{
				Cosine: c.Cosine, Bm25: c.BM25, Fused: c.Fused,
				DenseRank: int32(c.DenseRank), Bm25Rank: int32(c.BM25Rank), TriggerBoost: c.TriggerBoost,
			},
			TriggersFired: c.TriggersFired, NameMentioned: c.NameMentioned, Reason: c.Reason,
		})
	}
	return out
}

// MatchResult is the inverse of MatchResultPB.
func MatchResult(r *routerv1.MatchResponse) *skill.MatchResult {
	out := &skill.MatchResult{
		Verdict: verdicts.fromPB[r.GetVerdict()], VerdictDetail: r.GetVerdictDetail(),
		Abstained: r.GetAbstained(), AbstainReason: abstainReasons.fromPB[r.GetAbstainReason()], AbstainDetail: r.GetAbstainDetail(),
		Generation: r.GetIndexGeneration(), GenerationID: r.GetGenerationId(), Degraded: r.GetDegraded(),
		Mode: modes.fromPB[r.GetMode()], Fusion: fusions.fromPB[r.GetFusion()],
	}
	for _, c := range r.GetCandidates() {
		sc := c.GetScores()
		out.Candidates = append(out.Candidates, skill.Candidate{
			Skill: Summary(c.GetSkill()), Cosine: sc.GetCosine(), BM25: sc.GetBm25(), Fused: sc.GetFused(),
			DenseRank: int(sc.GetDenseRank()), BM25Rank: int(sc.GetBm25Rank()), TriggerBoost: sc.GetTriggerBoost(),
			TriggersFired: c.GetTriggersFired(), NameMentioned: c.GetNameMentioned(), Reason: c.GetReason(),
		})
	}
	return out
}

// ListResultPB carries a listing.
func ListResultPB(r *skill.ListResult) *routerv1.ListSkillsResponse {
	out := &routerv1.ListSkillsResponse{
		NextPageToken: r.NextPageToken, TotalSize: int32(r.Total), Catalog: catalogPB(r.Catalog),
		Shadowed: shadowsPB(r.Shadowed), IndexGeneration: r.Generation,
	}
	for _, s := range r.Skills {
		out.Skills = append(out.Skills, SummaryPB(s))
	}
	return out
}

// ListResult is the inverse of ListResultPB.
func ListResult(r *routerv1.ListSkillsResponse) *skill.ListResult {
	out := &skill.ListResult{
		NextPageToken: r.GetNextPageToken(), Total: int(r.GetTotalSize()), Catalog: renderedCatalog(r.GetCatalog()),
		Shadowed: shadows(r.GetShadowed()), Generation: r.GetIndexGeneration(),
	}
	for _, s := range r.GetSkills() {
		out.Skills = append(out.Skills, Summary(s))
	}
	return out
}

func catalogPB(c *skill.RenderedCatalog) *routerv1.RenderedCatalog {
	if c == nil {
		return nil
	}
	return &routerv1.RenderedCatalog{
		Text: c.Text, Chars: int32(c.Chars), Budget: int32(c.Budget), Included: c.Included, Shortened: c.Shortened, Cut: c.Cut,
	}
}

func renderedCatalog(c *routerv1.RenderedCatalog) *skill.RenderedCatalog {
	if c == nil {
		return nil
	}
	return &skill.RenderedCatalog{
		Text: c.GetText(), Chars: int(c.GetChars()), Budget: int(c.GetBudget()),
		Included: c.GetIncluded(), Shortened: c.GetShortened(), Cut: c.GetCut(),
	}
}

// GetResultPB carries a skill in full, with its manifest when it has one.
func GetResultPB(r *skill.GetResult) *routerv1.GetSkillResponse {
	return &routerv1.GetSkillResponse{Skill: DetailPB(r.Entry), IndexGeneration: r.Generation, Manifest: manifestPB(r.Manifest)}
}

// GetResult is the inverse of GetResultPB; an answer without a skill is an
// internal error.
func GetResult(r *routerv1.GetSkillResponse) (*skill.GetResult, error) {
	if r.GetSkill() == nil {
		return nil, skill.Errorf(skill.CodeInternal, "the router answered GetSkill without a skill")
	}
	return &skill.GetResult{Entry: Entry(r.GetSkill()), Generation: r.GetIndexGeneration(), Manifest: manifest(r.GetManifest())}, nil
}

// manifestPB carries a skill's manifest; nil for none.
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

// manifest is the inverse of manifestPB.
func manifest(m *routerv1.SkillManifest) *skill.Manifest {
	if m == nil {
		return nil
	}
	out := &skill.Manifest{Frontmatter: []byte(m.GetFrontmatterJson()), Files: make([]skill.FileDigest, 0, len(m.GetFiles()))}
	for _, f := range m.GetFiles() {
		out.Files = append(out.Files, skill.FileDigest{Path: f.GetPath(), Size: f.GetSizeBytes(), SHA256: f.GetSha256()})
	}
	return out
}

// LoadResultPB carries what a load served.
func LoadResultPB(r *skill.LoadResult) *routerv1.LoadResponse {
	s := r.Skill
	out := &routerv1.LoadResponse{
		Name: s.Name, Level: routerv1.LoadLevel(r.Level), Summary: SummaryPB(s), Content: r.Content, Data: r.Data,
		Framed: r.Framed, Truncated: r.Truncated, Tokens: int32(r.Tokens), TotalTokens: int32(r.TotalTokens),
		TokenBudget: int32(r.TokenBudget), TokenCounting: skill.TokenCounting,
		Provenance:   &routerv1.Provenance{Source: sourcePB(s), Sha256: r.SHA256, Trust: trustPB(s.Trusted())},
		ResourcePath: r.ResourcePath, SizeBytes: r.Size, MediaType: r.MediaType,
	}
	if r.Level == skill.LevelBody {
		out.Resources = resourcesPB(s.Resources)
	}
	return out
}

// LoadResult is the inverse of LoadResultPB.
func LoadResult(r *routerv1.LoadResponse) *skill.LoadResult {
	s := Summary(r.GetSummary())
	if s == nil {
		s = &skill.Skill{Name: r.GetName(), Frontmatter: skill.Frontmatter{Name: r.GetName()}}
		if src := source(r.GetProvenance().GetSource()); src != nil {
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

// ExecDecisionPB carries a decision on a script's run.
func ExecDecisionPB(d *skill.ExecDecision) *routerv1.AuthorizeExecResponse {
	out := &routerv1.AuthorizeExecResponse{
		Decision: routerv1.ExecDecision_EXEC_DECISION_DENY, DenyReason: denyReasons.toPB[d.Reason],
		Message: d.Message, ScriptSha256: d.ScriptSHA256, DecisionId: d.DecisionID,
	}
	if d.Allowed {
		out.Decision = routerv1.ExecDecision_EXEC_DECISION_ALLOW
	}
	return out
}

// ExecDecision is the inverse of ExecDecisionPB; an allowed run has no
// reason.
func ExecDecision(r *routerv1.AuthorizeExecResponse) *skill.ExecDecision {
	d := &skill.ExecDecision{
		Allowed: r.GetDecision() == routerv1.ExecDecision_EXEC_DECISION_ALLOW, Message: r.GetMessage(),
		ScriptSHA256: r.GetScriptSha256(), DecisionID: r.GetDecisionId(),
	}
	if !d.Allowed {
		d.Reason = denyReasons.fromPB[r.GetDenyReason()]
	}
	return d
}

// ToolResultPB carries a tool's result.
func ToolResultPB(r *skill.ToolResult) *routerv1.CallToolResponse {
	out := &routerv1.CallToolResponse{
		Name: r.Name, Server: r.Server, Tool: r.Tool, StructuredContent: string(r.StructuredContent),
		IsError: r.IsError, Truncated: r.Truncated, Framed: r.Framed, Bytes: int32(r.Bytes),
		Trust: trustPB(r.Trusted), Duration: durationpb.New(r.Duration), DecisionId: r.DecisionID,
		IndexGeneration: r.Generation,
	}
	for _, c := range r.Content {
		out.Content = append(out.Content, &routerv1.ToolContent{
			Type: c.Type, Text: c.Text, Data: c.Data, MimeType: c.MIMEType, Uri: c.URI, Name: c.Name, Description: c.Description,
		})
	}
	return out
}

// ToolResult is the inverse of ToolResultPB.
func ToolResult(r *routerv1.CallToolResponse) *skill.ToolResult {
	out := &skill.ToolResult{
		Name: r.GetName(), Server: r.GetServer(), Tool: r.GetTool(), IsError: r.GetIsError(), Truncated: r.GetTruncated(),
		Framed: r.GetFramed(), Bytes: int(r.GetBytes()), Trusted: trusted(r.GetTrust()),
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
