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

	"google.golang.org/grpc"

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
	return send(ctx, req, skillpb.MatchRequestPB, r.client.Match, always(skillpb.MatchResult))
}

// List forwards to SkillRouter.ListSkills.
func (r *Router) List(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
	return send(ctx, req, skillpb.ListRequestPB, r.client.ListSkills, always(skillpb.ListResult))
}

// Get forwards to SkillRouter.GetSkill.
func (r *Router) Get(ctx context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	res, err := send(ctx, req, always(skillpb.GetRequestPB), r.client.GetSkill, skillpb.GetResult)
	if err == nil && req.Manifest && res.Manifest == nil {
		return nil, skill.Errorf(skill.CodeInternal, "the router answered GetSkill without the manifest asked for")
	}
	return res, err
}

// Load forwards to SkillRouter.Load.
func (r *Router) Load(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	return send(ctx, req, skillpb.LoadRequestPB, r.client.Load, always(skillpb.LoadResult))
}

// Reindex forwards to SkillRouter.Reindex.
func (r *Router) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	return send(ctx, req, always(skillpb.ReindexRequestPB), r.client.Reindex,
		func(resp *routerv1.ReindexResponse) (*skill.ReindexStats, error) {
			st := skillpb.ReindexStats(resp.GetStats())
			return &st, nil
		})
}

// Status forwards to SkillRouter.Status.
func (r *Router) Status(ctx context.Context) (*skill.Status, error) {
	return send(ctx, &routerv1.StatusRequest{}, same, r.client.Status, always(skillpb.Status))
}

// AuthorizeExec forwards to SkillRouter.AuthorizeExec.
func (r *Router) AuthorizeExec(ctx context.Context, req skill.ExecRequest) (*skill.ExecDecision, error) {
	return send(ctx, req, always(skillpb.ExecRequestPB), r.client.AuthorizeExec, always(skillpb.ExecDecision))
}

// ReportExecResult forwards to SkillRouter.ReportExecResult. The remote
// router records the decision's skill and script; the API does not return
// them, so the report comes back as sent.
func (r *Router) ReportExecResult(ctx context.Context, req skill.ExecReport) (*skill.ExecReport, error) {
	return send(ctx, req, skillpb.ExecReportPB, r.client.ReportExecResult,
		func(*routerv1.ReportExecResultResponse) (*skill.ExecReport, error) { return &req, nil })
}

// CallTool forwards to SkillRouter.CallTool.
func (r *Router) CallTool(ctx context.Context, call skill.ToolCall) (*skill.ToolResult, error) {
	if len(call.Arguments) > skill.MaxToolArgumentBytes {
		return nil, skill.InvalidArgument(skill.FieldArguments, "%d bytes; the limit is %d", len(call.Arguments), skill.MaxToolArgumentBytes).
			WithReason(skill.ReasonArgumentsTooLarge)
	}
	return send(ctx, call, always(skillpb.ToolCallPB), r.client.CallTool, always(skillpb.ToolResult))
}

// send makes one call of the API: req goes out through toPB and rpc, the
// answer comes back through fromPB, and a gRPC status as the *skill.Error
// skillpb.ErrorOf makes of it. A request toPB refuses is not sent.
func send[Q, PQ, PR, R any](ctx context.Context, req Q, toPB func(Q) (PQ, error),
	rpc func(context.Context, PQ, ...grpc.CallOption) (PR, error), fromPB func(PR) (R, error)) (R, error) {
	var zero R
	in, err := toPB(req)
	if err != nil {
		return zero, err
	}
	resp, err := rpc(ctx, in)
	if err != nil {
		return zero, skillpb.ErrorOf(ctx, err)
	}
	return fromPB(resp)
}

// always makes a conversion that cannot fail one of send's.
func always[A, B any](f func(A) B) func(A) (B, error) {
	return func(a A) (B, error) { return f(a), nil }
}

// same is the conversion of a request that goes out as it is.
func same[T any](t T) (T, error) { return t, nil }

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
