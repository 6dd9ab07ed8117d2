package skillpb

import (
	"cmp"
	"encoding/json"

	"google.golang.org/protobuf/types/known/durationpb"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
)

// Requests. A request's PB form refuses what the API cannot carry (a
// number beyond 32 bits, an enum value it has no name for); its domain
// form passes an enum value it does not know through by name, so that the
// domain's validation reports it.

// MatchRequestPB carries a match request.
func MatchRequestPB(req skill.MatchRequest) (*routerv1.MatchRequest, error) {
	topK, err := int32Of(skill.FieldTopK, req.TopK)
	if err != nil {
		return nil, err
	}
	mode, ok := modes.toPB[req.Options.Mode]
	if !ok {
		return nil, skill.InvalidArgument(skill.FieldMode, "%q is not a match mode; want hybrid, dense or bm25", skill.Clip(string(req.Options.Mode), 40))
	}
	fusion, ok := fusions.toPB[req.Options.Fusion]
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

// MatchRequest is the inverse of MatchRequestPB.
func MatchRequest(req *routerv1.MatchRequest) skill.MatchRequest {
	o := req.GetOptions()
	mr := skill.MatchRequest{
		Task: req.GetTask(), TopK: int(req.GetTopK()), Agent: req.GetAgent(),
		Options: skill.MatchOptions{IncludeHidden: o.GetIncludeHidden(), Kinds: kindFilter(o.GetKinds())},
	}
	if f := o.GetFusion(); f != routerv1.Fusion_FUSION_UNSPECIFIED {
		mr.Options.Fusion = cmp.Or(fusions.fromPB[f], skill.Fusion(f.String()))
	}
	if m := o.GetMode(); m != routerv1.MatchMode_MATCH_MODE_UNSPECIFIED {
		mr.Options.Mode = cmp.Or(modes.fromPB[m], skill.MatchMode(m.String()))
	}
	if o != nil && o.Threshold != nil {
		t := o.GetThreshold()
		mr.Options.Threshold = &t
	}
	return mr
}

// kindFilterPB carries a kind filter given in request field field.
func kindFilterPB(field string, k skill.KindFilter) (routerv1.KindFilter, error) {
	pb, ok := kindFilters.toPB[k]
	if !ok {
		return 0, skill.InvalidArgument(field, "%q is not a kind filter; want skills, tools or both", skill.Clip(string(k), 40))
	}
	return pb, nil
}

// kindFilter is the inverse of kindFilterPB.
func kindFilter(k routerv1.KindFilter) skill.KindFilter {
	if f, ok := kindFilters.fromPB[k]; ok {
		return f
	}
	return skill.KindFilter(k.String())
}

// ListRequestPB carries a list request.
func ListRequestPB(req skill.ListRequest) (*routerv1.ListSkillsRequest, error) {
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

// ListRequest is the inverse of ListRequestPB.
func ListRequest(req *routerv1.ListSkillsRequest) skill.ListRequest {
	return skill.ListRequest{
		Agent: req.GetAgent(), PageSize: int(req.GetPageSize()), PageToken: req.GetPageToken(),
		IncludeHidden: req.GetIncludeHidden(), IncludeDisabled: req.GetIncludeDisabled(),
		CatalogBudget: int(req.GetCatalogCharBudget()), Kinds: kindFilter(req.GetKinds()),
	}
}

// GetRequestPB carries a get request.
func GetRequestPB(req skill.GetRequest) *routerv1.GetSkillRequest {
	return &routerv1.GetSkillRequest{Name: req.Name, Agent: req.Agent, Manifest: req.Manifest}
}

// GetRequest is the inverse of GetRequestPB.
func GetRequest(req *routerv1.GetSkillRequest) skill.GetRequest {
	return skill.GetRequest{Name: req.GetName(), Agent: req.GetAgent(), Manifest: req.GetManifest()}
}

// LoadRequestPB carries a load request.
func LoadRequestPB(req skill.LoadRequest) (*routerv1.LoadRequest, error) {
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

// LoadRequest is the inverse of LoadRequestPB.
func LoadRequest(req *routerv1.LoadRequest) skill.LoadRequest {
	return skill.LoadRequest{
		Name: req.GetName(), Agent: req.GetAgent(), Level: skill.LoadLevel(req.GetLevel()),
		ResourcePath: req.GetResourcePath(), TokenBudget: int(req.GetTokenBudget()), Raw: req.GetRaw(),
	}
}

// ReindexRequestPB carries a reindex request.
func ReindexRequestPB(req skill.ReindexRequest) *routerv1.ReindexRequest {
	return &routerv1.ReindexRequest{Full: req.Full}
}

// ReindexRequest is the inverse of ReindexRequestPB.
func ReindexRequest(req *routerv1.ReindexRequest) skill.ReindexRequest {
	return skill.ReindexRequest{Full: req.GetFull()}
}

// ExecRequestPB carries a request to run a script.
func ExecRequestPB(req skill.ExecRequest) *routerv1.AuthorizeExecRequest {
	return &routerv1.AuthorizeExecRequest{Skill: req.Skill, Script: req.Script, Caller: req.Caller, Agent: req.Agent}
}

// ExecRequest is the inverse of ExecRequestPB.
func ExecRequest(req *routerv1.AuthorizeExecRequest) skill.ExecRequest {
	return skill.ExecRequest{Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(), Agent: req.GetAgent()}
}

// ExecReportPB carries the report of a script's run.
func ExecReportPB(req skill.ExecReport) (*routerv1.ReportExecResultRequest, error) {
	code, err := int32Of("exit_code", req.ExitCode)
	if err != nil {
		return nil, err
	}
	return &routerv1.ReportExecResultRequest{
		DecisionId: req.DecisionID, Skill: req.Skill, Script: req.Script, ExitCode: code,
		Duration: durationpb.New(req.Duration), Error: req.Error, Caller: req.Caller,
	}, nil
}

// ExecReport is the inverse of ExecReportPB.
func ExecReport(req *routerv1.ReportExecResultRequest) skill.ExecReport {
	return skill.ExecReport{
		DecisionID: req.GetDecisionId(), Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(),
		ExitCode: int(req.GetExitCode()), Duration: req.GetDuration().AsDuration(), Error: req.GetError(),
	}
}

// ToolCallPB carries a call of a tool of an MCP server.
func ToolCallPB(call skill.ToolCall) *routerv1.CallToolRequest {
	return &routerv1.CallToolRequest{Name: call.Name, Arguments: string(call.Arguments), Agent: call.Agent, Caller: call.Caller}
}

// ToolCall is the inverse of ToolCallPB.
func ToolCall(req *routerv1.CallToolRequest) skill.ToolCall {
	return skill.ToolCall{Name: req.GetName(), Arguments: json.RawMessage(req.GetArguments()), Agent: req.GetAgent(), Caller: req.GetCaller()}
}

// int32Of refuses a number the API's 32-bit field cannot carry; the
// remote router would see a different number.
func int32Of(field string, v int) (int32, error) {
	if v < -1<<31 || v > 1<<31-1 {
		return 0, skill.InvalidArgument(field, "%d is out of range", v)
	}
	return int32(v), nil
}
