package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/eval"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/synthetic"
	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

// toolsRouter starts a router whose only entries are the tools of one MCP
// server (the test binary as a scripted server listing tools), and waits
// until all n are served.
func toolsRouter(b *testing.B, name string, tools []json.RawMessage) *daemontest.Router {
	b.Helper()
	ws := b.TempDir()
	must(b, os.MkdirAll(filepath.Join(ws, ".mcp"), 0o755))
	entry := scripted(b, &upstreamtest.Raw{Tools: tools, PageSize: 500}, ", max_tools: 100000, startup_timeout: 2m")
	must(b, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte("mcp_servers:\n  "+name+": "+entry+"\n"), 0o644))
	r := daemontest.Start(b, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Watch.Enabled, c.Watch.RescanInterval = false, 0
	}})
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err := r.Client.Status(context.Background(), &routerv1.StatusRequest{})
		if err == nil && int(st.GetTools()) == len(tools) {
			return r
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d tools served", st.GetTools(), len(tools))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// BenchmarkFindTools measures one routing call for tools end to end through
// a real router at 1k and 10k tools of one MCP server (synthetic, from the
// dev sets: their names, descriptions and parameters), in one run:
// find_tools over MCP's Streamable HTTP, and Match with kinds=tools over
// gRPC. Each call is sequential, over loopback, with a real dev-set query; it
// reports the median and 99th percentile.
//
//	go test -run x -bench FindTools -benchtime 2000x ./internal/daemon
func BenchmarkFindTools(b *testing.B) {
	src, err := synthetic.Load(filepath.Join(sharedDir(b), "eval"))
	if err != nil {
		b.Skip(err)
	}
	for _, n := range []int{1000, 10000} {
		var tools []json.RawMessage
		for _, s := range src.Catalog(n, 1) {
			schema, err := upstreamtest.ObjectSchema(s.Body, "## Parameters")
			if err != nil {
				b.Fatal(err)
			}
			t, _ := json.Marshal(map[string]any{"name": s.Name, "description": s.Description, "inputSchema": schema})
			tools = append(tools, t)
		}
		r := toolsRouter(b, "bench", tools)
		ctx := context.Background()
		cs := connectMCPBench(b, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
		for _, f := range []struct {
			name string
			call func(string) error
		}{
			{"mcp-http-find_tools", func(q string) error {
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"task": q}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				return err
			}},
			{"grpc-match-tools", func(q string) error {
				_, err := r.Client.Match(ctx, &routerv1.MatchRequest{Task: q, Options: &routerv1.MatchOptions{Kinds: routerv1.KindFilter_KIND_FILTER_TOOLS}})
				return err
			}},
		} {
			b.Run(fmt.Sprintf("tools=%d/%s", n, f.name), func(b *testing.B) {
				timeCalls(b, src.Queries, f.call)
			})
		}
	}
}

// connectMCPBench opens an MCP client session that waits for find_tools.
func connectMCPBench(b *testing.B, tr mcpsdk.Transport) *mcpsdk.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatalf("MCP connect: %v", err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// definitionTokens is the estimated size of one tool definition as a host
// registers it: its name, description and input schema as JSON, ceil(chars/4)
// tokens (skill.EstimateTokens).
func definitionTokens(name, description string, schema any) int {
	b, _ := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": schema})
	return skill.EstimateTokens(string(b))
}

// allDefinitionTokens lists a server's tools itself, as a host would, and
// sums the tokens of their definitions.
func allDefinitionTokens(b *testing.B, tr mcpsdk.Transport) (tools, tokens int) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	time.Sleep(time.Second) // tools some servers register right after initialize
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			b.Fatal(err)
		}
		tools++
		tokens += definitionTokens(t.Name, t.Description, t.InputSchema)
	}
	return tools, tokens
}

// BenchmarkToolTokens reports what find_tools saves a host: the estimated
// tokens of every tool definition the test servers list (what a host
// registers without the router) against the tokens of the definitions
// find_tools returns for each query of the dev set served (default top_k,
// abstentions counting zero), as median and 95th percentile. The dev sets'
// catalogs are served by the dev-set catalog server; the everything and
// filesystem servers from npm are listed when installed. The figures do not
// depend on the machine; run it once:
//
//	go test -run x -bench ToolTokens -benchtime 1x ./internal/daemon
func BenchmarkToolTokens(b *testing.B) {
	evalDir := filepath.Join(sharedDir(b), "eval")
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if node, err := exec.LookPath("node"); err == nil {
			_, file, _, _ := runtime.Caller(0)
			mods := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mcp-servers", "node_modules", "@modelcontextprotocol")
			for name, args := range map[string][]string{
				"everything": {filepath.Join(mods, "server-everything", "dist", "index.js"), "stdio"},
				"filesystem": {filepath.Join(mods, "server-filesystem", "dist", "index.js"), b.TempDir()},
			} {
				if _, err := os.Stat(args[0]); err != nil {
					continue
				}
				n, tok := allDefinitionTokens(b, &mcpsdk.CommandTransport{Command: exec.Command(node, args...)})
				b.Logf("%-11s %5d tools, all definitions %7d tokens", name, n, tok)
				b.ReportMetric(float64(tok), name+"-all-tokens")
			}
		}
		for _, set := range []string{"metatool", "seal-tools"} {
			dir := filepath.Join(evalDir, set)
			cat := exec.Command(exe)
			cat.Env = append(os.Environ(), upstreamtest.EnvCatalog+"="+dir)
			n, all := allDefinitionTokens(b, &mcpsdk.CommandTransport{Command: cat})

			qs, err := eval.LoadQueries(filepath.Join(dir, "queries.jsonl"))
			if err != nil {
				b.Fatal(err)
			}
			tools, err := upstreamtest.LoadCatalog(dir)
			if err != nil {
				b.Fatal(err)
			}
			var raw []json.RawMessage
			for _, t := range tools {
				m, _ := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.InputSchema})
				raw = append(raw, m)
			}
			r := toolsRouter(b, strings.ReplaceAll(set, "-", "_"), raw)
			cs := connectMCPBench(b, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
			var per []int
			abstained := 0
			for _, q := range qs {
				res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"task": q.Query}})
				if err != nil || res.IsError {
					b.Fatalf("find_tools %q: %v %v", q.Query, err, res)
				}
				var out struct {
					Tools []struct {
						Name, Description string
						InputSchema       json.RawMessage `json:"inputSchema"`
					}
				}
				if err := json.Unmarshal([]byte(res.Content[0].(*mcpsdk.TextContent).Text), &out); err != nil {
					b.Fatal(err)
				}
				tok := 0
				for _, t := range out.Tools {
					tok += definitionTokens(t.Name, t.Description, t.InputSchema)
				}
				if len(out.Tools) == 0 {
					abstained++
				}
				per = append(per, tok)
			}
			r.Stop(b)
			sort.Ints(per)
			p50, p95 := per[len(per)/2], per[min(len(per)-1, int(math.Ceil(0.95*float64(len(per))))-1)]
			b.Logf("%-11s %5d tools, all definitions %7d tokens; find_tools over %d queries: median %d, p95 %d tokens (%d%% of all at p95); %d abstained",
				set, n, all, len(qs), p50, p95, 100*p95/all, abstained)
			b.ReportMetric(float64(all), set+"-all-tokens")
			b.ReportMetric(float64(p50), set+"-find-p50-tokens")
			b.ReportMetric(float64(p95), set+"-find-p95-tokens")
			if p95 >= all {
				b.Errorf("%s: find_tools at p95 returns %d tokens, not fewer than all %d", set, p95, all)
			}
		}
	}
	b.ReportMetric(0, "ns/op")
}
