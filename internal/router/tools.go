package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpsag/router/internal/allowlist"
	"github.com/mcpsag/router/internal/skill"
)

// CallTool forwards a call to a tool of a connected MCP server. It goes
// through the same decision as a script run: feature flag tools_call must be
// on, the tool visible to the caller (agent and scope), and ALLOWLIST.txt
// must list it, pinned to its definition's sha256 when its server is
// untrusted. Text the tool returns comes back framed as untrusted data;
// isError passes through.
func (r *Router) CallTool(ctx context.Context, call skill.ToolCall) (*skill.ToolResult, error) {
	if err := call.Validate(); err != nil {
		return nil, err
	}
	g, err := r.generation()
	if err != nil {
		return nil, err
	}
	t, err := r.decideCall(ctx, g, call)
	if err != nil {
		return nil, err
	}
	if r.cfg.Upstream == nil {
		return nil, skill.Errorf(skill.CodeUnavailable, "no MCP servers are connected").WithReason(skill.ReasonServerUnavailable)
	}
	res, err := r.cfg.Upstream.Call(ctx, t.Tool, call.Arguments)
	if err != nil {
		return nil, err
	}
	res.Name, res.Generation, res.DecisionID = t.Name, g.ID, newID("call-")
	res.Trusted = t.Trusted()
	for i, c := range res.Content {
		if c.Type == "text" {
			res.Content[i].Text = frameToolResult(t, res.IsError, c.Text)
			res.Framed = true
		}
	}
	return res, nil
}

// decideCall returns the tool to call, or the refusal as an error.
func (r *Router) decideCall(ctx context.Context, g *Generation, call skill.ToolCall) (*skill.Skill, error) {
	deny := func(reason, format string, args ...any) error {
		return skill.Errorf(skill.CodePermissionDenied, format, args...).WithReason(reason)
	}
	if !r.Settings().Flags.ToolsCall {
		return nil, deny(skill.ReasonToolsCallDisabled, "calling tools is off (feature flag tools_call); an operator can turn it on in the config file")
	}
	t, ok := g.Catalog.Tool(call.Name, call.Agent)
	if !ok || !skill.ScopeFrom(ctx).Allows(t) {
		if _, isSkill := g.Catalog.Lookup(call.Name, call.Agent); isSkill {
			return nil, skill.Errorf(skill.CodeFailedPrecondition, "%s is a skill, not a tool: load it instead", skill.Clip(call.Name, 80)).
				WithReason(skill.ReasonNotATool)
		}
		return nil, skill.Errorf(skill.CodeNotFound, "no tool named %q is visible to this caller; find_tools or Match with kinds tools gives the names", skill.Clip(call.Name, 80)).
			WithReason(skill.ReasonToolNotFound)
	}
	list, err := r.allow.Load()
	if err != nil {
		r.log.Warn("allowlist unreadable; refusing every tool call", "err", err)
		return nil, deny(skill.ReasonToolNotAllowlisted, "the allowlist cannot be read; no tool may be called until it is fixed")
	}
	entry, ok := list.LookupTool(t.Name)
	pin := allowlist.ToolPrefix + t.Name + " sha256:" + t.ContentHash
	switch {
	case !ok:
		return nil, deny(skill.ReasonToolNotAllowlisted, "%s is not in %s; an operator can add the line %q", t.Name, r.displayPath(r.allow.Path), pin)
	case entry.SHA256 == "" && !t.Trusted():
		return nil, deny(skill.ReasonToolNotAllowlisted, "%s is a tool of untrusted server %s: its allowlist entry must pin its definition: %q",
			t.Name, t.Tool.Server, pin)
	case entry.SHA256 != "" && entry.SHA256 != t.ContentHash:
		return nil, deny(skill.ReasonToolChanged, "%s changed since it was approved: its definition's sha256 is %s, the allowlist (line %d) pins %s",
			t.Name, t.ContentHash, entry.Line, entry.SHA256)
	}
	return t, nil
}

// frameToolResult wraps text a tool returned in delimiters that mark it as
// data from an MCP server, with its provenance. A closing delimiter inside
// the text is defused.
func frameToolResult(t *skill.Skill, isError bool, text string) string {
	const tag = "tool_result"
	var b strings.Builder
	fmt.Fprintf(&b, "<%s name=%q server=%q trust=%q", tag, t.Name, t.Tool.Server, trustLabel(t))
	if isError {
		b.WriteString(` is_error="true"`)
	}
	closeFrame(&b, tag, text)
	return b.String()
}
