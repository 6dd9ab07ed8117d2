package server

import (
	"context"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/auth"
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

// Match ranks skills for a task, or abstains.
func (s *Service) Match(ctx context.Context, req *routerv1.MatchRequest) (*routerv1.MatchResponse, error) {
	mr, err := matchRequest(req)
	if err != nil {
		return nil, toStatus(err)
	}
	res, err := s.Engine.Match(ctx, mr)
	if err != nil {
		return nil, toStatus(err)
	}
	return matchPB(res), nil
}

// AuthorizeExec decides whether a script may run.
func (s *Service) AuthorizeExec(ctx context.Context, req *routerv1.AuthorizeExecRequest) (*routerv1.AuthorizeExecResponse, error) {
	d, err := s.Engine.AuthorizeExec(ctx, engine.ExecRequest{
		Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(), Agent: req.GetAgent(),
		Principal: auth.PrincipalFrom(ctx).ID, Peer: auth.PeerAddr(ctx),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return execDecisionPB(d), nil
}

// ReportExecResult records a run's outcome.
func (s *Service) ReportExecResult(ctx context.Context, req *routerv1.ReportExecResultRequest) (*routerv1.ReportExecResultResponse, error) {
	err := s.Engine.ReportExecResult(ctx, engine.ExecReport{
		DecisionID: req.GetDecisionId(), Skill: req.GetSkill(), Script: req.GetScript(), Caller: req.GetCaller(),
		Principal: auth.PrincipalFrom(ctx).ID, ExitCode: int(req.GetExitCode()),
		Duration: req.GetDuration().AsDuration(), Error: req.GetError(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	return &routerv1.ReportExecResultResponse{Recorded: true}, nil
}
