// Package remote is a skill.Router that forwards every call to a running
// router over its gRPC API, so that a front (the MCP server of `router mcp
// --connect`) can share one index and one embedding model with other
// clients instead of building its own. Requests go out as routerv1
// messages, answers come back as domain values, and gRPC statuses become
// *skill.Error values (code, field from BadRequest, reason from ErrorInfo).
// Validation stays with the remote router; this package only refuses
// numbers the API cannot carry.
package remote

import (
	"context"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/skillpb"
)

// Options configure a Router.
type Options struct {
	// PollInterval is how often WaitGeneration asks the remote router for
	// its generation; 0 means 1s.
	PollInterval time.Duration
}

// Router forwards skill.Router calls over gRPC. It also implements
// skill.GenerationWatcher by polling Status. It is safe for concurrent use.
type Router struct {
	client routerv1.SkillRouterClient
	poll   time.Duration
}

// New returns a Router over client. The client's connection carries the
// transport security and the bearer token (per-RPC credentials) of the
// caller's choosing; Router adds none.
func New(client routerv1.SkillRouterClient, opts Options) *Router {
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	return &Router{client: client, poll: opts.PollInterval}
}

var (
	_ skill.Router            = (*Router)(nil)
	_ skill.GenerationWatcher = (*Router)(nil)
)

// maxTaskBytes is the largest task that fits one request to a router (its
// gRPC servers take messages up to 1 MiB); the router's own limit is far
// lower, so a larger task is refused here with the router's error.
const maxTaskBytes = 1<<20 - 4<<10

// Match forwards to SkillRouter.Match.
func (r *Router) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	if len(req.Task) > maxTaskBytes {
		return nil, skill.InvalidArgument(skill.FieldTask, "the task is %d bytes; too large to send to the router", len(req.Task)).
			WithReason(skill.ReasonTaskTooLarge)
	}
	in, err := skillpb.MatchRequestPB(req)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Match(ctx, in)
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.MatchResult(resp), nil
}

// List forwards to SkillRouter.ListSkills.
func (r *Router) List(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
	in, err := skillpb.ListRequestPB(req)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.ListSkills(ctx, in)
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.ListResult(resp), nil
}

// Get forwards to SkillRouter.GetSkill.
func (r *Router) Get(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	resp, err := r.client.GetSkill(ctx, skillpb.GetRequestPB(req))
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	res, err := skillpb.GetResult(resp)
	if err == nil && req.Manifest && res.Manifest == nil {
		return nil, skill.Errorf(skill.CodeInternal, "the router answered GetSkill without the manifest asked for")
	}
	return res, err
}

// Load forwards to SkillRouter.Load.
func (r *Router) Load(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	in, err := skillpb.LoadRequestPB(req)
	if err != nil {
		return nil, err
	}
	resp, err := r.client.Load(ctx, in)
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.LoadResult(resp), nil
}

// Reindex forwards to SkillRouter.Reindex.
func (r *Router) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	resp, err := r.client.Reindex(ctx, skillpb.ReindexRequestPB(req))
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	st := skillpb.ReindexStats(resp.GetStats())
	return &st, nil
}

// Status forwards to SkillRouter.Status.
func (r *Router) Status(ctx context.Context) (*skill.Status, error) {
	resp, err := r.client.Status(ctx, &routerv1.StatusRequest{})
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.Status(resp), nil
}

// AuthorizeExec forwards to SkillRouter.AuthorizeExec.
func (r *Router) AuthorizeExec(ctx context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
	resp, err := r.client.AuthorizeExec(ctx, skillpb.ExecRequestPB(req))
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.ExecDecision(resp), nil
}

// ReportExecResult forwards to SkillRouter.ReportExecResult. The remote
// router records the decision's skill and script; the API does not return
// them, so the report comes back as sent.
func (r *Router) ReportExecResult(ctx context.Context, req skill.ExecReport) (*skill.ExecReport, error) {
	in, err := skillpb.ExecReportPB(req)
	if err != nil {
		return nil, err
	}
	if _, err := r.client.ReportExecResult(ctx, in); err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return &req, nil
}

// CallTool forwards to SkillRouter.CallTool.
func (r *Router) CallTool(ctx context.Context, call skill.ToolCall) (*skill.ToolResult, error) {
	if len(call.Arguments) > skill.MaxToolArgumentBytes {
		return nil, skill.InvalidArgument(skill.FieldArguments, "%d bytes; the limit is %d", len(call.Arguments), skill.MaxToolArgumentBytes).
			WithReason(skill.ReasonArgumentsTooLarge)
	}
	resp, err := r.client.CallTool(ctx, skillpb.ToolCallPB(call))
	if err != nil {
		return nil, skillpb.ErrorOf(ctx, err)
	}
	return skillpb.ToolResult(resp), nil
}

// WaitGeneration polls Status every PollInterval until the remote router
// serves a generation other than after. Failed polls (the router
// restarting) are retried; it returns ctx's error when ctx ends first.
func (r *Router) WaitGeneration(ctx context.Context, after uint64) (uint64, error) {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	for {
		resp, err := r.client.Status(ctx, &routerv1.StatusRequest{})
		if err == nil && resp.GetIndexGeneration() != after {
			return resp.GetIndexGeneration(), nil
		}
		select {
		case <-ctx.Done():
			return after, ctx.Err()
		case <-t.C:
		}
	}
}
