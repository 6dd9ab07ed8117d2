package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/engine"
	"github.com/mcpsag/router/internal/skill"
)

// Service implements the SkillRouter API over an engine.
type Service struct {
	routerv1.UnimplementedSkillRouterServer
	Engine *engine.Engine
}

// ListSkills returns level-1 summaries and, on request, a rendered catalog.
func (s *Service) ListSkills(_ context.Context, req *routerv1.ListSkillsRequest) (*routerv1.ListSkillsResponse, error) {
	res, err := s.Engine.ListSkills(engine.ListRequest{
		Agent:           req.GetAgent(),
		PageSize:        int(req.GetPageSize()),
		PageToken:       req.GetPageToken(),
		IncludeHidden:   req.GetIncludeHidden(),
		IncludeDisabled: req.GetIncludeDisabled(),
		CatalogBudget:   int(req.GetCatalogCharBudget()),
	})
	if err != nil {
		return nil, toStatus(err)
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

// GetSkill returns one skill in full.
func (s *Service) GetSkill(_ context.Context, req *routerv1.GetSkillRequest) (*routerv1.GetSkillResponse, error) {
	ent, gen, err := s.Engine.GetSkill(req.GetName(), req.GetAgent())
	if err != nil {
		return nil, toStatus(err)
	}
	return &routerv1.GetSkillResponse{Skill: detailPB(ent), IndexGeneration: gen}, nil
}

// Load serves a skill at a disclosure level.
func (s *Service) Load(ctx context.Context, req *routerv1.LoadRequest) (*routerv1.LoadResponse, error) {
	res, err := s.Engine.Load(ctx, engine.LoadRequest{
		Name:         req.GetName(),
		Agent:        req.GetAgent(),
		Level:        skill.LoadLevel(req.GetLevel()),
		ResourcePath: req.GetResourcePath(),
		TokenBudget:  int(req.GetTokenBudget()),
		Raw:          req.GetRaw(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return loadPB(res), nil
}

// Reindex rescans the skill roots now.
func (s *Service) Reindex(ctx context.Context, req *routerv1.ReindexRequest) (*routerv1.ReindexResponse, error) {
	st, err := s.Engine.Reindex(ctx, req.GetFull())
	if err != nil {
		return nil, toStatus(err)
	}
	return &routerv1.ReindexResponse{Stats: statsPB(st)}, nil
}

// Status reports the router's state.
func (s *Service) Status(context.Context, *routerv1.StatusRequest) (*routerv1.StatusResponse, error) {
	return statusPB(s.Engine.Status()), nil
}

// Match is built by the matching issue.
func (s *Service) Match(context.Context, *routerv1.MatchRequest) (*routerv1.MatchResponse, error) {
	return nil, status.Error(codes.Unimplemented, "Match is not available in this build yet (the matching engine lands with issue 5)")
}

// AuthorizeExec is built by the governance issue.
func (s *Service) AuthorizeExec(context.Context, *routerv1.AuthorizeExecRequest) (*routerv1.AuthorizeExecResponse, error) {
	return nil, status.Error(codes.Unimplemented, "AuthorizeExec is not available in this build yet (execution gating lands with issue 6)")
}

// ReportExecResult is built by the governance issue.
func (s *Service) ReportExecResult(context.Context, *routerv1.ReportExecResultRequest) (*routerv1.ReportExecResultResponse, error) {
	return nil, status.Error(codes.Unimplemented, "ReportExecResult is not available in this build yet (execution gating lands with issue 6)")
}
