package mcp

import (
	"context"
	"net/http/httptest"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// The front's own cost per find_skills call, over a router that answers at
// once: the SDK, the middleware and the transport. Compare with the router's
// Match cost to see what MCP adds.

func BenchmarkFindSkillsInMemory(b *testing.B) {
	h := newHarness(b)
	benchFind(b, h.cs)
}

func BenchmarkFindSkillsHTTP(b *testing.B) {
	h := newHarness(b)
	srv := httptest.NewServer(h.front.HTTPHandler(HTTPOptions{}))
	b.Cleanup(srv.Close)
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).
		Connect(context.Background(), &mcpsdk.StreamableClientTransport{Endpoint: srv.URL + Path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	benchFind(b, cs)
}

// BenchmarkBareSDKTool is the SDK's own round trip: a server with one tool
// of the same shapes and no middleware, for comparison.
func BenchmarkBareSDKTool(b *testing.B) {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "bare", Version: "1"}, nil)
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "t"}, func(ctx context.Context, _ *mcpsdk.CallToolRequest, in findInput) (*mcpsdk.CallToolResult, findOutput, error) {
		return nil, findOutput{Candidates: []candidateOut{{Name: "x"}}}, nil
	})
	st, ct := mcpsdk.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		b.Fatal(err)
	}
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	benchCall(b, cs, "t")
}

func BenchmarkFakeMatchDirect(b *testing.B) {
	r := newCatalog().router()
	ctx := context.Background()
	for b.Loop() {
		if _, err := r.Match(ctx, skillMatch("fill in a PDF form from JSON data")); err != nil {
			b.Fatal(err)
		}
	}
}

func skillMatch(task string) skill.MatchRequest { return skill.MatchRequest{Task: task} }

func benchFind(b *testing.B, cs *mcpsdk.ClientSession) { benchCall(b, cs, toolFind) }

func benchCall(b *testing.B, cs *mcpsdk.ClientSession, tool string) {
	ctx := context.Background()
	params := &mcpsdk.CallToolParams{Name: tool, Arguments: map[string]any{"task": "fill in a PDF form from JSON data"}}
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}
