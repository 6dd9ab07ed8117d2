package mcp

import (
	"context"
	"sync"
	"time"

	"github.com/mcpsag/router/internal/skill"
)

// Auditor receives the audit record of every MCP request (not
// notifications) and of every HTTP request refused before it reached MCP; a
// record marked Counted is to be counted, not written.
// *telemetry.Recorder is one. Implementations must be safe for concurrent
// use and should not block.
type Auditor interface {
	MCPCalled(ctx context.Context, rec skill.MCPCall)
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
func (s *rateSampler) sample(id string, now time.Time, rec *skill.MCPCall) {
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
