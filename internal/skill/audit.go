package skill

import "time"

// MCPCall is the audit record of one MCP request (not a notification), or
// of one HTTP request the MCP front refused before it reached MCP (bad
// Origin, missing or unknown token, an agent the token may not act for).
// The MCP front makes it; telemetry counts it and writes it as audit event
// mcp_call. It never holds a token, a task or skill content.
type MCPCall struct {
	Time time.Time
	// RequestID names the call in logs and in internal-error messages.
	RequestID string
	SessionID string
	// Method is the MCP method (tools/call, resources/read, ...), or "http"
	// for a request refused before MCP.
	Method string
	// Target is the tool or prompt name, or the resource URI.
	Target string
	// Principal is the token id; "anonymous" without tokens;
	// "unauthenticated" when no valid token was presented.
	Principal string
	// Peer is the client's network address, empty on stdio.
	Peer string
	// Agent is the agent the call acted for; Skill the skill it named.
	Agent, Skill string
	Decision     Decision
	// Reason says why a call was refused: origin, no_token, bad_token,
	// scope, agent, rate_limit.
	Reason string
	// Outcome is "ok", "tool_error" (arguments the SDK rejected), a Code
	// name such as "not_found", "protocol_error", or "refused" (before
	// MCP).
	Outcome  string
	Duration time.Duration
	// Counted asks for the call to be counted only, without an audit
	// line: refusals by a token's rate limit are audited sampled (the
	// first, then one a minute per token), so a client past its rate
	// cannot flood the audit stream.
	Counted bool
	// Unaudited is how many calls of the same token refused by its rate
	// limit since the last audited one this record stands for.
	Unaudited int
}
