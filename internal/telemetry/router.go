package telemetry

import (
	"context"
	"errors"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/mcpsag/router/internal/skill"
)

// Router wraps a skill.Router and records the skill events of every call
// (skill_selected, skill_loaded, skill_resource_requested,
// skill_exec_attempt, skill_exec_result, and tool_call, the audit record of
// every call of a tool, allowed or refused) exactly once, whichever front
// made it; match, load, reindex, authorize_exec and call_tool each in a span
// of its own (skill.match, skill.load, skill.reindex, skill.authorize_exec,
// skill.call_tool). Events carry the call's transport (skill.OriginFrom). It
// is a skill.GenerationWatcher when the Router it wraps is one. The
// methods it does not name (List, Get, Status, and any added to
// skill.Router) go to the wrapped Router as they are, and record nothing.
type Router struct {
	skill.Router
	Rec *Recorder
	// Tracer makes the spans; nil makes none (Telemetry.Tracer gives the
	// router's).
	Tracer trace.Tracer
}

// span starts a span named name under ctx's, with the call's transport.
func (t *Router) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	tr := t.Tracer
	if tr == nil {
		tr = tracenoop.NewTracerProvider().Tracer(ScopeName)
	}
	if o := skill.OriginFrom(ctx); o.Transport != "" {
		attrs = append(attrs, attribute.String(keyTransport, o.Transport))
	}
	return tr.Start(ctx, name, trace.WithAttributes(attrs...))
}

// end ends a span, marking it failed with err's code when err is not nil.
func end(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, skill.ErrorCode(err).String())
		span.SetAttributes(attribute.String(keyErrorType, skill.ErrorCode(err).String()))
	}
	span.End()
}

var (
	_ skill.Router            = (*Router)(nil)
	_ skill.GenerationWatcher = (*Router)(nil)
)

// Match records skill_selected for every answer, abstentions included.
func (t *Router) Match(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	ctx, span := t.span(ctx, "skill.match", attribute.Int("top_k", req.TopK))
	start := time.Now()
	res, err := t.Router.Match(ctx, req)
	if err == nil {
		span.SetAttributes(attribute.Bool("abstained", res.Abstained), attribute.Int("candidates", len(res.Candidates)),
			attribute.String(keyMode, string(res.Mode)), attribute.Bool(keyDegraded, res.Degraded))
		t.Rec.SkillSelected(ctx, Selection{Task: req.Task, Agent: req.Agent, TopK: req.TopK, Result: *res, Latency: time.Since(start)})
	}
	end(span, err)
	return res, err
}

// Load records skill_loaded for every load served, and
// skill_resource_requested for every level-3 request, allowed or not.
func (t *Router) Load(ctx context.Context, req skill.LoadRequest) (res *skill.LoadResult, err error) {
	ctx, span := t.span(ctx, "skill.load", attribute.Int("load.level", int(req.Level)))
	defer func() { end(span, err) }()
	start := time.Now()
	res, err = t.Router.Load(ctx, req)
	latency := time.Since(start)
	if req.Level == skill.LevelResource {
		q := ResourceRequest{Agent: req.Agent, Resource: req.ResourcePath, Allowed: err == nil}
		if res != nil {
			q.Skill, q.Bytes = res.Skill.Name, res.Size
		} else {
			q.Skill = t.resolvedName(ctx, req.Name, req.Agent)
			q.DenyReason = denyReason(err)
		}
		t.Rec.ResourceRequested(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	path := res.Skill.RelPath
	if res.Level == skill.LevelResource {
		path = res.ResourcePath
	}
	t.Rec.SkillLoaded(ctx, Load{
		Skill: res.Skill.Name, Source: res.Skill.Root.Kind, Agent: req.Agent, Level: res.Level, Path: path,
		Tokens: res.Tokens, TotalTokens: res.TotalTokens, Budget: res.TokenBudget, Truncated: res.Truncated, Latency: latency,
	})
	return res, nil
}

// resolvedName returns the name of the skill agent sees under name, or ""
// when there is none: only real skill names become metric labels.
func (t *Router) resolvedName(ctx context.Context, name, agent string) string {
	if g, err := t.Router.Get(ctx, skill.GetRequest{Name: name, Agent: agent}); err == nil {
		return g.Entry.Skill.Name
	}
	return ""
}

// denyReason turns an error into a stable lower-case code.
func denyReason(err error) string {
	var de *skill.Error
	if errors.As(err, &de) && de.Reason != "" {
		return strings.ToLower(de.Reason)
	}
	return skill.ErrorCode(err).String()
}

// Reindex records a span only: the loader reports every pass, requested or
// not, through its OnPass hook (loader.Config.OnPass, see
// Recorder.Reindexed).
func (t *Router) Reindex(ctx context.Context, req skill.ReindexRequest) (*skill.ReindexStats, error) {
	ctx, span := t.span(ctx, "skill.reindex", attribute.Bool(keyFull, req.Full))
	st, err := t.Router.Reindex(ctx, req)
	if err == nil {
		span.SetAttributes(attribute.Int64("index.generation", int64(st.Generation)), attribute.Int("parsed", st.Parsed),
			attribute.Int("embedded", st.Embedded))
	}
	end(span, err)
	return st, err
}

// AuthorizeExec records skill_exec_attempt, the audit record of every
// decision.
func (t *Router) AuthorizeExec(ctx context.Context, req skill.ExecRequest) (d *skill.ExecDecision, err error) {
	ctx, span := t.span(ctx, "skill.authorize_exec")
	defer func() { end(span, err) }()
	d, err = t.Router.AuthorizeExec(ctx, req)
	if err != nil {
		return nil, err
	}
	o := skill.OriginFrom(ctx)
	decision := skill.DecisionAllow
	if !d.Allowed {
		decision = skill.DecisionDeny
	}
	t.Rec.ExecAttempted(ctx, ExecAttempt{
		DecisionID: d.DecisionID, Skill: req.Skill, Script: req.Script, Caller: req.Caller, Principal: o.Principal,
		Agent: req.Agent, Decision: decision, Reason: string(d.Reason), ScriptSHA256: d.ScriptSHA256, Peer: o.Peer,
	})
	return d, nil
}

// ReportExecResult records skill_exec_result for every report accepted.
func (t *Router) ReportExecResult(ctx context.Context, rep skill.ExecReport) (*skill.ExecReport, error) {
	got, err := t.Router.ReportExecResult(ctx, rep)
	if err != nil {
		return nil, err
	}
	errClass := ""
	switch {
	case got.Error != "":
		errClass = "error"
	case got.ExitCode != 0:
		errClass = "nonzero_exit"
	}
	t.Rec.ExecReported(ctx, ExecResult{
		DecisionID: got.DecisionID, Skill: got.Skill, Script: got.Script, Caller: got.Caller,
		Principal: skill.OriginFrom(ctx).Principal, ExitCode: got.ExitCode, Duration: got.Duration, ErrorClass: errClass,
	})
	return got, nil
}

// CallTool records tool_call, the audit record of every call, allowed or
// refused, in span skill.call_tool.
func (t *Router) CallTool(ctx context.Context, call skill.ToolCall) (res *skill.ToolResult, err error) {
	ctx, span := t.span(ctx, "skill.call_tool")
	defer func() { end(span, err) }()
	start := time.Now()
	res, err = t.Router.CallTool(ctx, call)
	o := skill.OriginFrom(ctx)
	rec := ToolCall{Caller: call.Caller, Principal: o.Principal, Agent: call.Agent, Peer: o.Peer,
		Decision: skill.DecisionAllow, Duration: time.Since(start)}
	if res != nil {
		rec.Tool, rec.Server, rec.DecisionID, rec.Bytes = res.Name, res.Server, res.DecisionID, res.Bytes
		switch {
		case res.IsError:
			rec.Outcome = "tool_error"
		case res.Truncated:
			rec.Outcome = "truncated"
		default:
			rec.Outcome = "ok"
		}
		span.SetAttributes(attribute.String("tool.server", res.Server), attribute.Bool("tool.is_error", res.IsError))
	} else {
		var de *skill.Error
		errors.As(err, &de)
		code := skill.ErrorCode(err)
		switch {
		case de == nil:
		case code == skill.CodePermissionDenied, code == skill.CodeNotFound, code == skill.CodeFailedPrecondition,
			code == skill.CodeInvalidArgument:
			rec.Decision, rec.Reason = skill.DecisionDeny, denyReason(err)
		case code == skill.CodeResourceExhausted:
			rec.Decision, rec.Reason = skill.DecisionRateLimited, denyReason(err)
		}
		rec.Outcome = code.String()
		rec.Tool = call.Name
		if code != skill.CodeNotFound && code != skill.CodeInvalidArgument && code != skill.CodeFailedPrecondition &&
			(de == nil || de.Reason != skill.ReasonToolsCallDisabled) {
			// The tool exists: its server may become a metric label.
			rec.Server, _, _ = strings.Cut(call.Name, ".")
		}
	}
	t.Rec.ToolCalled(ctx, rec)
	return res, err
}

// WaitGeneration forwards to the wrapped Router when it is a skill.GenerationWatcher, and
// otherwise waits for ctx to end.
func (t *Router) WaitGeneration(ctx context.Context, after uint64) (uint64, error) {
	if w, ok := t.Router.(skill.GenerationWatcher); ok {
		return w.WaitGeneration(ctx, after)
	}
	<-ctx.Done()
	return 0, ctx.Err()
}
