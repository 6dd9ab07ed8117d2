package telemetry_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/telemetry"
)

// nextRouter is the router the decorator wraps; a true edge for these tests.
type nextRouter struct {
	skill.Router // nil: methods not set here panic
	load         func(skill.LoadRequest) (*skill.LoadResult, error)
}

func (n *nextRouter) Match(_ context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	if req.Task == "fail" {
		return nil, skill.InvalidArgument(skill.FieldTask, "bad")
	}
	return &skill.MatchResult{Mode: skill.ModeHybrid, Candidates: []skill.Candidate{{Skill: testSkill("pdf-tools"), Fused: 0.9}}}, nil
}

func (n *nextRouter) Load(_ context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
	return n.load(req)
}

func (n *nextRouter) Get(_ context.Context, req skill.GetRequest) (*skill.GetResult, error) {
	if req.Name == "pdf-tools" {
		return &skill.GetResult{Entry: &skill.Entry{Skill: testSkill("pdf-tools")}}, nil
	}
	return nil, skill.Errorf(skill.CodeNotFound, "no")
}

func (n *nextRouter) AuthorizeExec(context.Context, skill.ExecRequest) (*skill.ExecDecision, error) {
	return &skill.ExecDecision{Reason: skill.DenyExecDisabled, DecisionID: "exec-1"}, nil
}

func attr(r sdklog.Record, key string) string {
	var v string
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		if string(kv.Key) == key {
			v = kv.Value.AsString()
			return false
		}
		return true
	})
	return v
}

// TestRouterDecoratorRecordsEachEventOnce: every call through the decorator
// gives its event exactly once, labelled with the call's transport, inside a
// span of its own; failed calls give no selection or load event.
func TestRouterDecoratorRecordsEachEventOnce(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	next := &nextRouter{load: func(req skill.LoadRequest) (*skill.LoadResult, error) {
		if req.ResourcePath == "../x" {
			return nil, skill.Errorf(skill.CodePermissionDenied, "out").WithReason("PATH_ESCAPE")
		}
		return &skill.LoadResult{Skill: testSkill("pdf-tools"), Level: req.Level, ResourcePath: req.ResourcePath, Size: 10}, nil
	}}
	r := &telemetry.Router{Router: next, Rec: m.Recorder(), Tracer: m.Tracer()}
	ctx := skill.WithOrigin(context.Background(), skill.Origin{Transport: "mcp", Principal: "token:a", Peer: "127.0.0.1:1"})

	if _, err := r.Match(ctx, skill.MatchRequest{Task: "fill pdf"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Match(ctx, skill.MatchRequest{Task: "fail"}); err == nil {
		t.Fatal("the wrapped error was lost")
	}
	if _, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-tools", Level: skill.LevelBody}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-tools", Level: skill.LevelResource, ResourcePath: "ok.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Load(ctx, skill.LoadRequest{Name: "pdf-tools", Level: skill.LevelResource, ResourcePath: "../x"}); err == nil {
		t.Fatal("the wrapped error was lost")
	}
	if _, err := r.AuthorizeExec(ctx, skill.ExecRequest{Skill: "pdf-tools", Script: "s.sh"}); err != nil {
		t.Fatal(err)
	}

	for event, want := range map[string]int{
		telemetry.EventSkillSelected:     1,
		telemetry.EventSkillLoaded:       2,
		telemetry.EventResourceRequested: 2,
		telemetry.EventExecAttempt:       1,
	} {
		recs := m.logs.byEvent(event)
		if len(recs) != want {
			t.Errorf("%s: %d records, want %d", event, len(recs), want)
		}
		for _, rec := range recs {
			if got := attr(rec, "transport"); got != "mcp" {
				t.Errorf("%s: transport %q, want mcp", event, got)
			}
		}
	}
	denied := m.logs.byEvent(telemetry.EventResourceRequested)
	if len(denied) == 2 && (attr(denied[1], "skill") != "pdf-tools" || attr(denied[1], "deny.reason") != "path_escape") {
		t.Errorf("denied resource request: skill %q reason %q", attr(denied[1], "skill"), attr(denied[1], "deny.reason"))
	}
	if exec := m.logs.byEvent(telemetry.EventExecAttempt); len(exec) == 1 && attr(exec[0], "principal") != "token:a" {
		t.Errorf("exec audit principal %q, want the origin's", attr(exec[0], "principal"))
	}
	spans := map[string]int{}
	for _, s := range m.spans.GetSpans() {
		spans[s.Name]++
	}
	if spans["skill.match"] != 2 || spans["skill.load"] != 3 || spans["skill.authorize_exec"] != 1 {
		t.Errorf("spans %v, want 2 match, 3 load, 1 authorize_exec", spans)
	}
}

func TestMCPCalledIsAnAuditRecord(t *testing.T) {
	m := setupMem(t, telemetry.Config{})
	ctx := skill.WithOrigin(context.Background(), skill.Origin{Transport: "mcp"})
	m.Recorder().MCPCalled(ctx, skill.MCPCall{RequestID: "r1", Method: "tools/call", Target: "find_skills",
		Principal: "agent", Decision: skill.DecisionDeny, Reason: "scope", Outcome: "permission_denied"})
	recs := m.logs.byEvent(telemetry.EventMCPCall)
	if len(recs) != 1 {
		t.Fatalf("%d mcp_call records, want 1", len(recs))
	}
	for key, want := range map[string]string{"log.type": "audit", "transport": "mcp", "decision": "deny", "reason": "scope", "target": "find_skills"} {
		if got := attr(recs[0], key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
	// A sampled refusal is counted, not written.
	m.Recorder().MCPCalled(ctx, skill.MCPCall{RequestID: "r2", Method: "tools/call", Target: "find_skills",
		Principal: "agent", Decision: skill.DecisionRateLimited, Reason: "rate_limit", Outcome: "resource_exhausted", Counted: true})
	if n := len(m.logs.byEvent(telemetry.EventMCPCall)); n != 1 {
		t.Errorf("%d mcp_call records after a counted-only call, want still 1", n)
	}
}
