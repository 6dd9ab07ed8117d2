package daemon_test

import (
	"context"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/synthetic"
)

// BenchmarkFronts measures one routing call end to end through each front of
// a real router at 1k and 10k synthetic skills (from the dev sets), in one
// run so the figures compare: Match over gRPC, find_skills over MCP's
// Streamable HTTP, and find_skills over stdio (router mcp, standalone). Each
// call is sequential, over loopback, with a real dev-set query; it reports
// the median and 99th percentile.
//
//	go test -run x -bench Fronts -benchtime 2000x ./internal/daemon
func BenchmarkFronts(b *testing.B) {
	src, err := synthetic.Load(filepath.Join(sharedDir(b), "eval"))
	if err != nil {
		b.Skip(err)
	}
	for _, n := range []int{1000, 10000} {
		ws := b.TempDir()
		if err := synthetic.WriteWorkspace(ws, src.Catalog(n, 1)); err != nil {
			b.Fatal(err)
		}
		r := daemontest.Start(b, ws, daemontest.Options{Configure: func(c *config.Config) {
			c.MCP.Addr = "127.0.0.1:0"
			c.Watch.Enabled, c.Watch.RescanInterval = false, 0
		}})
		ctx := context.Background()
		httpSession := connectBench(b, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
		stdio := exec.Command(router(b), "mcp", "--workspace", ws, "--state-dir", b.TempDir(), "--log-level", "warn")
		stdioSession := connectBench(b, &mcpsdk.CommandTransport{Command: stdio})
		find := func(cs *mcpsdk.ClientSession) func(string) error {
			return func(q string) error {
				res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": q}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool error: %v", res.Content)
				}
				return err
			}
		}
		for _, f := range []struct {
			name string
			call func(string) error
		}{
			{"grpc-match", func(q string) error {
				_, err := r.Client.Match(ctx, &routerv1.MatchRequest{Task: q})
				return err
			}},
			{"mcp-http-find_skills", find(httpSession)},
			{"mcp-stdio-find_skills", find(stdioSession)},
		} {
			b.Run(fmt.Sprintf("skills=%d/%s", n, f.name), func(b *testing.B) {
				timeCalls(b, src.Queries, f.call)
			})
		}
	}
}

// timeCalls calls call with the queries in turn for b's iterations and
// reports the latency's median and 99th percentile.
func timeCalls(b *testing.B, queries []string, call func(string) error) {
	times := make([]time.Duration, 0, 4096)
	i := 0
	for b.Loop() {
		q := queries[i%len(queries)]
		i++
		t0 := time.Now()
		if err := call(q); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t0))
	}
	reportLatency(b, times)
}

// reportLatency reports the median and 99th percentile of times, in ms.
func reportLatency(b *testing.B, times []time.Duration) {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(times[len(times)/2]), "p50-ms")
	b.ReportMetric(ms(times[min(len(times)-1, int(math.Ceil(0.99*float64(len(times))))-1)]), "p99-ms")
	b.ReportMetric(0, "ns/op") // the percentiles are the figures; the mean hides the tail
}

func connectBench(b *testing.B, tr mcpsdk.Transport) *mcpsdk.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		b.Fatalf("MCP connect: %v", err)
	}
	b.Cleanup(func() { cs.Close() })
	// The first call waits for the standalone router's first index.
	for {
		_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_skills", Arguments: map[string]any{"task": "warm up"}})
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cs
}
