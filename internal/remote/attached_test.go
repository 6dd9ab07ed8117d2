package remote

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/mcp"
	"github.com/mcpsag/router/internal/mcp/mcptest"
)

// TestAttachedMCP serves MCP over a Router attached to a gRPC router, as
// `router mcp --connect` does: tool calls reach the remote router, and its
// new generations reach MCP clients as list_changed notifications.
func TestAttachedMCP(t *testing.T) {
	ts := &testServer{gen: 1, skills: []*routerv1.SkillSummary{pdfSummary}}
	r, _ := serve(t, ts, Options{PollInterval: 20 * time.Millisecond})
	front := mcp.New(r, mcp.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = front.Run(ctx) }()
	srv, err := front.Server(ctx, mcp.View{Features: mcp.AllFeatures})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcpsdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	changed := make(chan string, 8)
	opts := &mcpsdk.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcpsdk.PromptListChangedRequest) { changed <- "prompts" },
	}
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "attached", Version: "1"}, opts, ct)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": "fill a form", "agent": "coder"}})
	if err != nil || res.IsError {
		t.Fatalf("find_skills: %v %+v", err, res)
	}
	if got := ts.request("Match").(*routerv1.MatchRequest); got.GetTask() != "fill a form" || got.GetAgent() != "coder" {
		t.Errorf("the remote router got %v", got)
	}
	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": "pdf-form-filling", "token_budget": 300}})
	if err != nil || res.IsError || len(res.Content) != 1 {
		t.Fatalf("load_skill: %v %+v", err, res)
	}
	if files := res.StructuredContent.(map[string]any)["files"].([]any); len(files) != 1 || files[0].(map[string]any)["uri"] != "skill://pdf-form-filling/references/a.md" {
		t.Errorf("files = %+v", files)
	}

	ts.setFail("Load", withDetails(t, codes.NotFound, `no skill named "x"`))
	res, err = cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "load_skill", Arguments: map[string]any{"name": "x"}})
	if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcpsdk.TextContent).Text, `not_found: no skill named "x"`) {
		t.Errorf("remote not found: %v %+v", err, res)
	}

	ts.publish(pdfSummary, learnedSummary)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the remote router's new generation was not relayed")
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts.Prompts {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"learned-trick", "pdf-form-filling"}) {
		t.Errorf("prompts after the remote change = %v", names)
	}
}
