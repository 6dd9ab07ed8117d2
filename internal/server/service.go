package server

import (
	"context"
	"encoding/json"
	"log/slog"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
)

// Service implements the SkillRouter API over a skill.Router.
type Service struct {
	routerv1.UnimplementedSkillRouterServer
	Router skill.Router
	// Logger receives internal errors, each once with its request id.
	Logger *slog.Logger
}

// origin attaches the caller's identity for audit records and telemetry, and
// the MCP servers its token may reach.
func origin(ctx context.Context) context.Context {
	p := auth.PrincipalFrom(ctx)
	ctx = skill.WithScope(ctx, skill.Scope{Servers: p.Servers()})
	return skill.WithOrigin(ctx, skill.Origin{Transport: "grpc", Principal: p.ID, Peer: auth.PeerAddr(ctx)})
}

// Match ranks skills for a task, or abstains.
func (s *Service) Match(ctx context.Context, req *routerv1.MatchRequest) (*routerv1.MatchResponse, error) {
	res, err := s.Router.Match(origin(ctx), matchRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return matchPB(res), nil
}

// ListSkills returns level-1 summaries and, on request, a rendered catalog.
func (s *Service) ListSkills(ctx context.Context, req *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	res, err := s.Router.List(origin(ctx), skill.ListRequest{
		Agent:           req.GetAgent(),
		PageSize:        int(req.GetPageSize()),
		PageToken:       req.GetPageToken(),
		IncludeHidden:   req.GetIncludeHidden(),
		IncludeDisabled: req.GetIncludeDisabled(),
		CatalogBudget:   int(req.GetCatalogCharBudget()),
		Kinds:           kindFilter(req.GetKinds()),
	})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	out := &routerv1.ListSkillsResponse{
		NextPageToken:   res.NextPageToken,
		TotalSize:       int32(res.Total),
		Catalog:         catalogPB(res.Catalog),
		Shadowed:        shadowsPB(res.Shadowed),
		IndexGeneration: res.Generation,
	}
	for _, sk := range res.Skills {
		out.Skills = append(out.Skills, summaryPB(sk))
	}
	return out, nil
}

// GetSkill returns one skill in full, with its manifest on request.
func (s *Service) GetSkill(ctx context.Context, req *routerv1.GetSkillRequest) (*routerv1.GetSkillResponse, error) {
	res, err := s.Router.Get(origin(ctx), skill.GetRequest{Name: req.GetName(), Agent: req.GetAgent(), Manifest: req.GetManifest()})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return &routerv1.GetSkillResponse{Skill: detailPB(res.Entry), IndexGeneration: res.Generation, Manifest: manifestPB(res.Manifest)}, nil
}

// Load serves a skill at a disclosure level.
func (s *Service) Load(ctx context.Context, req *routerv1.LoadRequest) (*routerv1.LoadResponse, error) {
	res, err := s.Router.Load(origin(ctx), skill.LoadRequest{
		Name:         req.GetName(),
		Agent:        req.GetAgent(),
		Level:        skill.LoadLevel(req.GetLevel()),
		ResourcePath: req.GetResourcePath(),
		TokenBudget:  int(req.GetTokenBudget()),
		Raw:          req.GetRaw(),
	})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return loadPB(res), nil
}

// Reindex rescans the skill roots now.
func (s *Service) Reindex(ctx context.Context, req *routerv1.ReindexRequest) (*routerv1.ReindexResponse, error) {
	st, err := s.Router.Reindex(origin(ctx), skill.ReindexRequest{Full: req.GetFull()})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return &routerv1.ReindexResponse{Stats: statsPB(*st)}, nil
}

// Status reports the router's state.
func (s *Service) Status(ctx context.Context, _ *routerv1.StatusRequest) (*routerv1.StatusResponse, error) {
	st, err := s.Router.Status(origin(ctx))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return statusPB(st), nil
}

// AuthorizeExec decides whether a script may run.
func (s *Service) AuthorizeExec(ctx context.Context, req *routerv1.AuthorizeExecRequest) (*routerv1.AuthorizeExecResponse, error) {
	d, err := s.Router.AuthorizeExec(origin(ctx), skill.ExecRequest{
		Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(), Agent: req.GetAgent(),
	})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return execDecisionPB(d), nil
}

// ReportExecResult records a run's outcome.
func (s *Service) ReportExecResult(ctx context.Context, req *routerv1.ReportExecResultRequest) (*routerv1.ReportExecResultResponse, error) {
	_, err := s.Router.ReportExecResult(origin(ctx), skill.ExecReport{
		DecisionID: req.GetDecisionId(), Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(),
		ExitCode: int(req.GetExitCode()), Duration: req.GetDuration().AsDuration(), Error: req.GetError(),
	})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return &routerv1.ReportExecResultResponse{Recorded: true}, nil
}

// CallTool forwards a call to a tool of a connected MCP server.
func (s *Service) CallTool(ctx context.Context, req *routerv1.CallToolRequest) (*routerv1.CallToolResponse, error) {
	res, err := s.Router.CallTool(origin(ctx), skill.ToolCall{
		Name: req.GetName(), Arguments: json.RawMessage(req.GetArguments()), Agent: req.GetAgent(), Caller: req.GetCaller(),
	})
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return callToolPB(res), nil
}
