package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// Auditor receives one record for every MCP request (not notifications) and
// for every HTTP request refused before it reached MCP (bad Origin, missing
// or unknown token, an agent the token may not act for); a record marked
// Counted is to be counted, not written. Implementations
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
	// Counted asks for the call to be counted only, without an audit
	// line: refusals by a token's rate limit are audited sampled (the
	// first, then one a minute per token), so a client past its rate
	// cannot flood the audit stream.
	Counted bool
	// Unaudited is how many calls of the same token refused by its rate
	// limit since the last audited one this record stands for.
	Unaudited int
}

// rateSampler decides which refusals by a token's rate limit are audited.
type rateSampler struct {
	mu     sync.Mutex
	tokens map[string]*rateSample // by token id
}

type rateSample struct {
	audited   time.Time
	unaudited int
}

// rateAuditEvery is how often refusals of one token by its rate limit are
// audited.
const rateAuditEvery = time.Minute

// sample marks rec, a refusal of token id at now, as counted only, or says
// how many such refusals it stands for. It forgets tokens past a minute
// once it knows many, so that it stays small.
func (s *rateSampler) sample(id string, now time.Time, rec *AuditRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tokens == nil {
		s.tokens = map[string]*rateSample{}
	}
	t := s.tokens[id]
	if t == nil {
		if len(s.tokens) >= 10000 {
			for k, v := range s.tokens {
				if now.Sub(v.audited) >= rateAuditEvery {
					delete(s.tokens, k)
				}
			}
		}
		t = &rateSample{}
		s.tokens[id] = t
	}
	if now.Sub(t.audited) < rateAuditEvery {
		t.unaudited++
		rec.Counted = true
		return
	}
	rec.Unaudited, t.audited, t.unaudited = t.unaudited, now, 0
}

// Principal names used in audit records and origins.
const (
	principalAnonymous       = "anonymous"
	principalUnauthenticated = "unauthenticated"
)
