package telemetry

import (
	"context"
	"time"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
)

// Audit records (exec attempts, exec results, admin calls) go to the audit
// logger scope (AuditScopeName), carry log.type=audit, and are mirrored to
// the stderr log at Info. They name principals by id, never by token.

// ExecAttempt describes one AuthorizeExec decision, for ExecAttempted.
type ExecAttempt struct {
	// DecisionID identifies the decision in ReportExecResult.
	DecisionID string
	// Skill is the requested skill name. It becomes a metric label unless
	// Reason is skill.DenyNotFound or skill.DenyExecDisabled (the name was
	// not looked up), so unchecked names cannot mint series.
	Skill string
	// Script is relative to the skill folder.
	Script string
	// Caller is who the request says it is for; Principal is who
	// authenticated (a token id or certificate identity, never the token).
	Caller, Principal string
	Agent             string
	Decision          skill.Decision
	// Reason is the deny reason code (exec_disabled, not_allowlisted,
	// hash_mismatch, path_escape, not_found, skill_disabled); empty when
	// allowed.
	Reason       string
	ScriptSHA256 string
	Peer         string // client address
}

// ExecAttempted records an AuthorizeExec decision: audit event
// skill_exec_attempt and the exec decisions counter (by decision and
// reason). Call it once per AuthorizeExec, allowed or denied; it is the
// audit record for the decision.
func (r *Recorder) ExecAttempted(ctx context.Context, e ExecAttempt) {
	if r == nil {
		return
	}
	reason := clip(e.Reason)
	label := e.Skill
	switch skill.DenyReason(reason) {
	case skill.DenyNotFound, skill.DenyExecDisabled:
		label = ""
	}
	r.execDecisions.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keySkill, label),
		attribute.String(keyDecision, string(e.Decision)),
		attribute.String(keyReason, reason)))
	r.emit(ctx, r.audit, EventExecAttempt, otellog.SeverityInfo, true, []attribute.KeyValue{
		attribute.String("decision.id", clip(e.DecisionID)),
		attribute.String(keySkill, clip(e.Skill)),
		attribute.String("script", clip(e.Script)),
		attribute.String("caller", clip(e.Caller)),
		attribute.String("principal", clip(e.Principal)),
		attribute.String(keyAgent, clip(e.Agent)),
		attribute.String(keyDecision, string(e.Decision)),
		attribute.String(keyReason, reason),
		attribute.String("script.sha256", clip(e.ScriptSHA256)),
		attribute.String("client.address", clip(e.Peer)),
	})
}

// ExecResult describes one ReportExecResult, for ExecReported.
type ExecResult struct {
	DecisionID        string
	Skill, Script     string
	Caller, Principal string
	ExitCode          int
	Duration          time.Duration
	// ErrorClass is a stable code for a failed run (timeout, signal,
	// start_failed, ...); empty on success. Never the raw error text, which
	// may hold script output.
	ErrorClass string
}

// ExecReported records a reported script outcome: audit event
// skill_exec_result, the exec results counter (by outcome and error.type)
// and the exec duration histogram. A run succeeded when ExitCode is 0 and
// ErrorClass is empty.
func (r *Recorder) ExecReported(ctx context.Context, e ExecResult) {
	if r == nil {
		return
	}
	outcome, errType := "ok", ""
	if e.ErrorClass != "" || e.ExitCode != 0 {
		outcome, errType = "error", clip(e.ErrorClass)
		if errType == "" {
			errType = "exit_code"
		}
	}
	r.execResults.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keySkill, e.Skill),
		attribute.String(keyOutcome, outcome),
		attribute.String(keyErrorType, errType)))
	r.execDuration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(attribute.String(keySkill, e.Skill)))
	r.emit(ctx, r.audit, EventExecResult, otellog.SeverityInfo, true, []attribute.KeyValue{
		attribute.String("decision.id", clip(e.DecisionID)),
		attribute.String(keySkill, clip(e.Skill)),
		attribute.String("script", clip(e.Script)),
		attribute.String("caller", clip(e.Caller)),
		attribute.String("principal", clip(e.Principal)),
		attribute.Int("exit_code", e.ExitCode),
		attribute.Float64(keyDurationMS, ms(e.Duration)),
		attribute.String(keyOutcome, outcome),
		attribute.String(keyErrorType, errType),
	})
}

// AdminCalled records an admin call: audit event admin_call and the admin
// calls counter (by method and decision). Call it once per admin call,
// denied calls included.
func (r *Recorder) AdminCalled(ctx context.Context, a auth.AdminCall) {
	if r == nil {
		return
	}
	method := clip(a.Method)
	r.adminCalls.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keyMethod, method),
		attribute.String(keyDecision, string(a.Decision))))
	r.emit(ctx, r.audit, EventAdminCall, otellog.SeverityInfo, true, []attribute.KeyValue{
		attribute.String(keyMethod, method),
		attribute.String("principal", clip(a.Principal)),
		attribute.String(keyDecision, string(a.Decision)),
		attribute.String(keyReason, clip(a.Reason)),
		attribute.String("client.address", clip(a.Peer)),
		attribute.String("code", clip(a.Code)),
	})
}

// MCPCalled records an MCP request: audit event mcp_call and the MCP calls
// counter (by method, decision and outcome). Call it once per request,
// refused ones included. It makes *Recorder an mcp.Auditor.
func (r *Recorder) MCPCalled(ctx context.Context, c skill.MCPCall) {
	if r == nil {
		return
	}
	method := clip(c.Method)
	r.mcpCalls.Add(ctx, 1, metric.WithAttributes(
		attribute.String(keyMethod, method),
		attribute.String(keyDecision, string(c.Decision)),
		attribute.String(keyOutcome, clip(c.Outcome))))
	if c.Counted {
		return
	}
	r.emit(ctx, r.audit, EventMCPCall, otellog.SeverityInfo, true, []attribute.KeyValue{
		attribute.String("request.id", clip(c.RequestID)),
		attribute.String("session.id", clip(c.SessionID)),
		attribute.String(keyMethod, method),
		attribute.String("target", clip(c.Target)),
		attribute.String("principal", clip(c.Principal)),
		attribute.String("client.address", clip(c.Peer)),
		attribute.String(keyAgent, clip(c.Agent)),
		attribute.String(keySkill, clip(c.Skill)),
		attribute.String(keyDecision, string(c.Decision)),
		attribute.String(keyReason, clip(c.Reason)),
		attribute.String(keyOutcome, clip(c.Outcome)),
		attribute.Float64(keyDurationMS, ms(c.Duration)),
		attribute.Int("unaudited", c.Unaudited),
	})
}

// ToolCall describes one CallTool, for ToolCalled. It never holds the
// arguments or the result.
type ToolCall struct {
	DecisionID string
	// Tool is the entry name ("server.tool") as asked; Server the name of
	// its server, set only when the tool exists (it is a metric label).
	Tool, Server      string
	Caller, Principal string
	Agent             string
	Decision          skill.Decision
	// Reason is the refusal's reason code (tools_call_disabled,
	// tool_not_allowlisted, tool_changed, tool_not_found, ...); empty
	// when allowed.
	Reason string
	// Outcome is ok, tool_error (the tool ran and reported isError),
	// truncated, or the error code of a failed call.
	Outcome  string
	Bytes    int
	Duration time.Duration
	Peer     string
}

// ToolCalled records a tool call: audit event tool_call, the tool calls
// counter (by server, decision, reason and outcome) and, for allowed calls,
// their duration. Call it once per CallTool, refused ones included.
func (r *Recorder) ToolCalled(ctx context.Context, c ToolCall) {
	if r == nil {
		return
	}
	server := clip(c.Server)
	r.toolCalls.Add(ctx, 1, metric.WithAttributes(
		attribute.String("server", server),
		attribute.String(keyDecision, string(c.Decision)),
		attribute.String(keyReason, clip(c.Reason)),
		attribute.String(keyOutcome, clip(c.Outcome))))
	if c.Decision == skill.DecisionAllow {
		r.toolDuration.Record(ctx, c.Duration.Seconds(), metric.WithAttributes(
			attribute.String("server", server), attribute.String(keyOutcome, clip(c.Outcome))))
	}
	r.emit(ctx, r.audit, EventToolCall, otellog.SeverityInfo, true, []attribute.KeyValue{
		attribute.String("decision.id", clip(c.DecisionID)),
		attribute.String("tool", clip(c.Tool)),
		attribute.String("server", server),
		attribute.String("caller", clip(c.Caller)),
		attribute.String("principal", clip(c.Principal)),
		attribute.String(keyAgent, clip(c.Agent)),
		attribute.String(keyDecision, string(c.Decision)),
		attribute.String(keyReason, clip(c.Reason)),
		attribute.String(keyOutcome, clip(c.Outcome)),
		attribute.Int("bytes", c.Bytes),
		attribute.Float64(keyDurationMS, ms(c.Duration)),
		attribute.String("client.address", clip(c.Peer)),
	})
}
