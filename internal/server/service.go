package server

import (
	"context"
	"log/slog"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
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
	res, err := s.Router.Match(origin(ctx), skillpb.MatchRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.MatchResultPB(res), nil
}

// ListSkills returns level-1 summaries and, on request, a rendered catalog.
func (s *Service) ListSkills(ctx context.Context, req *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	res, err := s.Router.List(origin(ctx), skillpb.ListRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.ListResultPB(res), nil
}

// GetSkill returns one skill in full, with its manifest on request.
func (s *Service) GetSkill(ctx context.Context, req *routerv1.GetSkillRequest) (*routerv1.GetSkillResponse, error) {
	res, err := s.Router.Get(origin(ctx), skillpb.GetRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.GetResultPB(res), nil
}

// Load serves a skill at a disclosure level.
func (s *Service) Load(ctx context.Context, req *routerv1.LoadRequest) (*routerv1.LoadResponse, error) {
	res, err := s.Router.Load(origin(ctx), skillpb.LoadRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.LoadResultPB(res), nil
}

// Reindex rescans the skill roots now.
func (s *Service) Reindex(ctx context.Context, req *routerv1.ReindexRequest) (*routerv1.ReindexResponse, error) {
	st, err := s.Router.Reindex(origin(ctx), skillpb.ReindexRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return &routerv1.ReindexResponse{Stats: skillpb.ReindexStatsPB(*st)}, nil
}

// Status reports the router's state.
func (s *Service) Status(ctx context.Context, _ *routerv1.StatusRequest) (*routerv1.StatusResponse, error) {
	st, err := s.Router.Status(origin(ctx))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.StatusPB(st), nil
}

// AuthorizeExec decides whether a script may run.
func (s *Service) AuthorizeExec(ctx context.Context, req *routerv1.AuthorizeExecRequest) (*routerv1.AuthorizeExecResponse, error) {
	d, err := s.Router.AuthorizeExec(origin(ctx), skillpb.ExecRequest(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.ExecDecisionPB(d), nil
}

// ReportExecResult records a run's outcome.
func (s *Service) ReportExecResult(ctx context.Context, req *routerv1.ReportExecResultRequest) (*routerv1.ReportExecResultResponse, error) {
	if _, err := s.Router.ReportExecResult(origin(ctx), skillpb.ExecReport(req)); err != nil {
		return nil, s.status(ctx, err)
	}
	return &routerv1.ReportExecResultResponse{Recorded: true}, nil
}

// CallTool forwards a call to a tool of a connected MCP server.
func (s *Service) CallTool(ctx context.Context, req *routerv1.CallToolRequest) (*routerv1.CallToolResponse, error) {
	res, err := s.Router.CallTool(origin(ctx), skillpb.ToolCall(req))
	if err != nil {
		return nil, s.status(ctx, err)
	}
	return skillpb.ToolResultPB(res), nil
}
