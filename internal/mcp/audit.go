package mcp

import (
	"context"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// Auditor receives one record for every MCP request (not notifications) and
// for every HTTP request refused before it reached MCP (bad Origin, missing
// or unknown token, an agent the token may not act for). Implementations
// must be safe for concurrent use and should not block.
type Auditor interface {
	AuditMCP(ctx context.Context, rec AuditRecord)
}

// AuditRecord describes one call. It never holds a token, a task or skill
// content.
type AuditRecord struct {
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
	Decision     skill.Decision
	// Reason says why a call was refused: origin, no_token, bad_token,
	// scope, agent, rate_limit.
	Reason string
	// Outcome is "ok", "tool_error" (arguments the SDK rejected), a
	// skill.Code name such as "not_found", or "protocol_error".
	Outcome  string
	Duration time.Duration
}

// Principal names used in audit records and origins.
const (
	principalAnonymous       = "anonymous"
	principalUnauthenticated = "unauthenticated"
)
