package remote

import (
	"context"
	"encoding/json"
	"net"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/server"
	"github.com/mcpsag/router/internal/skill"
)

// toolRouter answers Match, Status and CallTool with tool data; the rest is
// not needed here.
type toolRouter struct {
	skill.Router // nil: other methods are not called
	tool         *skill.Skill
	status       *skill.Status
	gotMatch     skill.MatchRequest
	gotCall      skill.ToolCall
	result       *skill.ToolResult
}

func (r *toolRouter) Match(_ context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
	r.gotMatch = req
	return &skill.MatchResult{Candidates: []skill.Candidate{{Skill: r.tool, Fused: 0.5}}, Generation: 4}, nil
}
func (r *toolRouter) Status(context.Context) (*skill.Status, error) { return r.status, nil }
func (r *toolRouter) CallTool(_ context.Context, c skill.ToolCall) (*skill.ToolResult, error) {
	r.gotCall = c
	return r.result, nil
}

// TestToolsRoundTrip sends tools, servers and tool calls through the gRPC
// front and back into domain values: what the router says arrives intact.
func TestToolsRoundTrip(t *testing.T) {
	no, yes := false, true
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tool := &skill.Skill{Name: "gh.create_issue", Kind: skill.EntryTool, ContentHash: "abc",
		Frontmatter: skill.Frontmatter{Name: "gh.create_issue", Description: "Create an issue"},
		Root:        skill.Root{Kind: skill.KindServer, Display: "gh"}, RelPath: "create_issue",
		Tool: &skill.Tool{Server: "gh", Name: "create_issue", Title: "Create", Trusted: true, Agents: []string{"coder"},
			InputSchema: json.RawMessage(`{"type":"object","properties":{"z":{},"a":{}}}`),
			Params:      []skill.ToolParam{{Name: "z", Description: "last", Type: "string", Required: true}},
			Results:     []skill.ToolParam{{Name: "id", Description: "the issue number", Type: "integer"}},
			Hints:       skill.ToolHints{Title: "t", ReadOnly: true, Destructive: &no, OpenWorld: &yes}}}
	st := &skill.Status{Serving: true, Tools: 7, Flags: skill.Flags{ToolsCall: true}, Servers: []skill.ServerStatus{{
		Name: "gh", Transport: "http", Endpoint: "https://h", State: skill.ServerFailed, Trusted: true, Agents: []string{"coder"},
		Tools: 1, ToolsListed: 2, ToolsFiltered: 3, ToolsDropped: 4, Resources: -1, Prompts: 5, ServerName: "n", ServerVersion: "v",
		ProtocolVersion: "p", LastError: "e", LastErrorAt: at, ConnectedAt: at, ListedAt: at, NextAttempt: at,
		Restarts: 6, ListChanged: 7, Refreshes: 8, Diagnostics: []string{"d"}, StderrTail: []string{"s"},
	}}}
	res := &skill.ToolResult{Name: "gh.create_issue", Server: "gh", Tool: "create_issue", IsError: true, Truncated: true, Framed: true,
		Bytes: 9, Trusted: true, Duration: time.Second, DecisionID: "call-1", Generation: 4, StructuredContent: json.RawMessage(`{"n":1}`),
		Content: []skill.ToolContent{{Type: "text", Text: "x"}, {Type: "image", Data: []byte{1}, MIMEType: "image/png"},
			{Type: "resource_link", URI: "file:///a", Name: "a", Description: "d"}}}
	fake := &toolRouter{tool: tool, status: st, result: res}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	routerv1.RegisterSkillRouterServer(srv, &server.Service{Router: fake})
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := New(routerv1.NewSkillRouterClient(conn), Options{})
	ctx := context.Background()

	m, err := r.Match(ctx, skill.MatchRequest{Task: "x", Options: skill.MatchOptions{Kinds: skill.KindsTools}})
	if err != nil {
		t.Fatal(err)
	}
	if fake.gotMatch.Options.Kinds != skill.KindsTools {
		t.Errorf("kinds sent: %q", fake.gotMatch.Options.Kinds)
	}
	got := m.Candidates[0].Skill
	if !got.IsTool() || got.Name != tool.Name || got.ContentHash != "abc" || got.Root.Kind != skill.KindServer ||
		!reflect.DeepEqual(got.Tool, tool.Tool) {
		t.Errorf("tool after the round trip:\n%+v\nwant\n%+v", got.Tool, tool.Tool)
	}

	gotSt, err := r.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gotSt.Tools != 7 || !gotSt.Flags.ToolsCall || !reflect.DeepEqual(gotSt.Servers, st.Servers) {
		t.Errorf("servers after the round trip:\n%+v\nwant\n%+v", gotSt.Servers, st.Servers)
	}

	call := skill.ToolCall{Name: "gh.create_issue", Arguments: json.RawMessage(`{"z":"1"}`), Agent: "coder", Caller: "me"}
	gotRes, err := r.CallTool(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fake.gotCall, call) {
		t.Errorf("call after the round trip: %+v", fake.gotCall)
	}
	if !reflect.DeepEqual(gotRes, res) {
		t.Errorf("result after the round trip:\n%+v\nwant\n%+v", gotRes, res)
	}
	if _, err := r.CallTool(ctx, skill.ToolCall{Name: "x", Arguments: make(json.RawMessage, skill.MaxToolArgumentBytes+1)}); skill.ErrorCode(err) != skill.CodeInvalidArgument {
		t.Errorf("oversized arguments: %v", err)
	}
}
