package mcp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/skill"
)

// call is the state of one MCP request, shared by the middleware and the
// handler through the context.
type call struct {
	id        string
	principal *auth.Principal // nil when anonymous
	peer      string
	// Set by handlers.
	agent, skill string
	decision     skill.Decision
	reason       string
	outcome      string
}

type callKey struct{}

// callFrom returns the call of ctx; a detached one when there is none, so
// handlers never check.
func callFrom(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return &call{id: newRequestID(), decision: skill.DecisionAllow, outcome: "ok"}
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// principalID names p in audit records and origins.
func principalID(p *auth.Principal) string {
	if p == nil || p == auth.Anonymous {
		return principalAnonymous
	}
	return p.ID
}

// Keys under which the HTTP front passes request facts to handlers: the
// principal in TokenInfo.Extra, the peer address in a request header it sets
// itself (a client's own value is removed first).
const (
	tokenExtraPrincipal = "mcpsag.principal"
	peerHeader          = "Mcpsag-Peer-Addr"
)

func requestFacts(req mcpsdk.Request) (p *auth.Principal, peer string, overHTTP bool) {
	extra := req.GetExtra()
	if extra == nil {
		return nil, "", false
	}
	if extra.TokenInfo != nil {
		p, _ = extra.TokenInfo.Extra[tokenExtraPrincipal].(*auth.Principal)
	}
	if extra.Header != nil {
		overHTTP = true
		peer = extra.Header.Get(peerHeader)
	}
	return p, peer, overHTTP
}

// target is the tool, prompt or resource a request names.
func target(method string, req mcpsdk.Request) string {
	switch p := req.GetParams().(type) {
	case *mcpsdk.CallToolParamsRaw:
		if p != nil {
			return p.Name
		}
	case *mcpsdk.GetPromptParams:
		if p != nil {
			return p.Name
		}
	case *mcpsdk.ReadResourceParams:
		if p != nil {
			return p.URI
		}
	case *mcpsdk.SubscribeParams:
		if p != nil {
			return p.URI
		}
	case *mcpsdk.UnsubscribeParams:
		if p != nil {
			return p.URI
		}
	case *getSkillParams:
		if p != nil {
			return p.URI
		}
	case *readDirectoryParams:
		if p != nil {
			return p.URI
		}
	}
	return ""
}

// Server-defined JSON-RPC error codes (the range -32000 to -32099 is left to
// servers). Tool calls never get them: tools answer refusals with isError
// results.
const (
	codeForbidden   int64 = -32010 // the token lacks the group, or may not act for the agent
	codeRateLimited int64 = -32011 // the token's rate limit is spent; data.retry_after_ms says how long to wait
	codeUnavailable int64 = -32012 // the router is not ready or cannot be reached
)

// middleware wraps every request a view's server receives: it names the
// call, attaches the skill.Origin, checks the token's groups and rate limit,
// opens a span and writes the audit record.
func (f *Front) middleware(vw *view) mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			notification := strings.HasPrefix(method, "notifications/")
			p, peer, overHTTP := requestFacts(req)
			tgt := target(method, req)
			start := time.Now()
			ctx, span := f.startSpan(ctx, method, tgt, req, overHTTP)
			defer span.End()
			if notification {
				return next(ctx, method, req)
			}
			c := &call{id: newRequestID(), principal: p, peer: peer, agent: vw.key.Agent, decision: skill.DecisionAllow, outcome: "ok"}
			origin := skill.Origin{Transport: "mcp", Peer: peer}
			if p != nil && p != auth.Anonymous {
				origin.Principal = p.ID
			}
			ctx = skill.WithOrigin(context.WithValue(ctx, callKey{}, c), origin)
			if p != nil {
				ctx = skill.WithScope(ctx, skill.Scope{Servers: p.Servers()})
			}

			res, err := f.admit(c, method, tgt)
			if res == nil && err == nil && method == "tools/call" {
				res = f.notOffered(c, vw, tgt)
			}
			if res == nil && err == nil {
				if res, err = next(ctx, method, req); err != nil {
					err = f.explain(ctx, vw, method, req, err)
				}
			}
			switch r := res.(type) {
			case *mcpsdk.CallToolResult:
				if r != nil && r.IsError && c.outcome == "ok" {
					c.outcome = "tool_error" // arguments the SDK rejected before the handler
				}
			}
			if err != nil && c.outcome == "ok" {
				c.outcome = "protocol_error"
			}
			f.endSpan(span, c, err)
			if f.opts.Auditor != nil {
				sid := ""
				if s := req.GetSession(); s != nil {
					sid = s.ID()
				}
				rec := skill.MCPCall{
					Time: start, RequestID: c.id, SessionID: sid, Method: method, Target: tgt,
					Principal: principalID(p), Peer: peer, Agent: c.agent, Skill: c.skill,
					Decision: c.decision, Reason: c.reason, Outcome: c.outcome, Duration: time.Since(start),
				}
				if c.decision == skill.DecisionRateLimited {
					f.rateAudits.sample(rec.Principal, start, &rec)
				}
				f.opts.Auditor.MCPCalled(ctx, rec)
			}
			return res, err
		}
	}
}

// admit checks the caller's groups and rate limit. It returns a refusal (a
// tool result or a JSON-RPC error), or nils to let the call through.
func (f *Front) admit(c *call, method, tgt string) (mcpsdk.Result, error) {
	p := c.principal
	if p == nil {
		return nil, nil // anonymous: stdio, or HTTP without tokens
	}
	need := methodFeatures[method]
	if method == "tools/call" {
		need = toolFeatures[tgt]
	}
	if need != 0 && FeaturesOf(p)&need == 0 {
		c.decision, c.reason, c.outcome = skill.DecisionDeny, "scope", "permission_denied"
		if method == "tools/call" {
			return toolRefusal(fmt.Sprintf("permission_denied: token %s may not call %s (it needs group %s; the token has %s)",
				p.ID, tgt, toolGroups[tgt], groupList(p))), nil
		}
		return nil, &jsonrpc.Error{Code: codeForbidden, Message: fmt.Sprintf(
			"token %s may not use %s: skill content needs group load (the token has %s)", p.ID, method, groupList(p))}
	}
	if d := p.Admit(); d > 0 {
		c.decision, c.reason, c.outcome = skill.DecisionRateLimited, "rate_limit", "resource_exhausted"
		wait := d.Round(time.Millisecond) + time.Millisecond
		msg := fmt.Sprintf("rate limit of token %s exceeded: retry in %v", p.ID, wait)
		if method == "tools/call" {
			return toolRefusal("resource_exhausted: " + msg), nil
		}
		return nil, &jsonrpc.Error{Code: codeRateLimited, Message: msg,
			Data: []byte(fmt.Sprintf(`{"retry_after_ms":%d}`, wait.Milliseconds()))}
	}
	return nil, nil
}

// notOffered refuses a call to one of this server's tools that the view
// does not offer now, saying why, instead of the SDK's "unknown tool"; nil
// lets the call through.
func (f *Front) notOffered(c *call, vw *view, name string) mcpsdk.Result {
	need, known := toolFeatures[name]
	if !known {
		return nil
	}
	if vw.key.Features&need == 0 {
		c.decision, c.reason, c.outcome = skill.DecisionDeny, "scope", "permission_denied"
		return toolRefusal(fmt.Sprintf("permission_denied: this connection may not call %s (it needs token group %s)", name, toolGroups[name]))
	}
	var msg string
	switch {
	case name == toolExec && !vw.exec.Load():
		msg = "failed_precondition: authorize_exec is off: feature flag skills_exec is off on this router [EXEC_DISABLED]"
	case (name == toolFindTools || name == toolCall) && !vw.servers.Load():
		msg = fmt.Sprintf("failed_precondition: %s is not offered: the router has no MCP servers (mcp_servers in its config)", name)
	case name == toolCall && !vw.call.Load():
		msg = "failed_precondition: call_tool is off: feature flag tools_call is off on this router [" + skill.ReasonToolsCallDisabled + "]"
	default:
		return nil
	}
	c.decision, c.reason, c.outcome = skill.DecisionDeny, "not_offered", "failed_precondition"
	return toolRefusal(msg)
}

func groupList(p *auth.Principal) string {
	g := p.Groups()
	if len(g) == 0 {
		return "no groups"
	}
	return strings.Join(g, ", ")
}

func toolRefusal(text string) *mcpsdk.CallToolResult {
	return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}
}

// startSpan opens the server span of one request, named after the OTel MCP
// conventions ("{mcp.method.name} {target}"), continuing a trace the client
// sent in params._meta.
func (f *Front) startSpan(ctx context.Context, method, tgt string, req mcpsdk.Request, overHTTP bool) (context.Context, trace.Span) {
	if params := req.GetParams(); !isNil(params) {
		if meta := params.GetMeta(); len(meta) > 0 {
			carrier := propagation.MapCarrier{}
			for _, k := range []string{"traceparent", "tracestate"} {
				if v, ok := meta[k].(string); ok {
					carrier[k] = v
				}
			}
			ctx = propagation.TraceContext{}.Extract(ctx, carrier)
		}
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	name := method
	switch method {
	case "tools/call":
		name += " " + tgt
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tgt), attribute.String("gen_ai.operation.name", "execute_tool"))
	case "prompts/get":
		name += " " + tgt
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", tgt))
	case "resources/read":
		attrs = append(attrs, attribute.String("mcp.resource.uri", skill.Clip(tgt, 512)))
	}
	if s := req.GetSession(); s != nil && s.ID() != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", s.ID()))
	}
	transport := "pipe"
	if overHTTP {
		transport = "tcp"
	}
	attrs = append(attrs, attribute.String("network.transport", transport))
	return f.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// isNil reports whether params is nil or a typed nil pointer.
func isNil(params mcpsdk.Params) bool {
	if params == nil {
		return true
	}
	v := reflect.ValueOf(params)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (f *Front) endSpan(span trace.Span, c *call, err error) {
	span.SetAttributes(attribute.String("mcpsag.request_id", c.id), attribute.String("mcpsag.outcome", c.outcome))
	if c.skill != "" {
		span.SetAttributes(attribute.String("mcpsag.skill", c.skill))
	}
	if c.outcome != "ok" {
		span.SetAttributes(attribute.String("error.type", c.outcome))
		msg := c.outcome
		if err != nil {
			msg = err.Error()
		}
		span.SetStatus(codes.Error, skill.Clip(msg, 200))
	}
}
