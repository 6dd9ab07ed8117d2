package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// tsClientDir holds the TypeScript SDK client script and its pinned
// dependencies (npm ci installs them; .ci/run does).
var tsClientDir = filepath.Join("..", "..", "testdata", "mcp-ts-client")

type tsSummary struct {
	Transport   string   `json:"transport"`
	Tools       []string `json:"tools"`
	Found       []string `json:"found"`
	Links       []string `json:"links"`
	Skills      int      `json:"skills"`
	Resources   int      `json:"resources"`
	Prompts     int      `json:"prompts"`
	ListChanged bool     `json:"listChanged"`
}

// runTSClient runs the script with args and decodes its summary.
func runTSClient(t *testing.T, env []string, args ...string) tsSummary {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript SDK client test needs Node 18 or later")
	}
	if _, err := os.Stat(filepath.Join(tsClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skipf("the TypeScript SDK is not installed: run 'npm ci' in %s (.ci/run does)", tsClientDir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, args...)...)
	cmd.Dir = tsClientDir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("TypeScript client: %v\nstderr:\n%s\nstdout:\n%s", err, stderr.String(), stdout.String())
	}
	var s tsSummary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		t.Fatalf("TypeScript client summary %q: %v", stdout.String(), err)
	}
	return s
}

func checkTSSummary(t *testing.T, s tsSummary) {
	t.Helper()
	if !slices.Equal(s.Tools, []string{toolFind, toolList, toolLoad, toolRead}) {
		t.Errorf("tools = %v", s.Tools)
	}
	if len(s.Found) == 0 || s.Found[0] != "pdf-form-filling" || len(s.Links) != 3 {
		t.Errorf("found %v, links %v", s.Found, s.Links)
	}
	// The stdio server adds a skill every 500ms, so counts only grow.
	if s.Skills < 6 || s.Resources < 5 || s.Prompts < 5 {
		t.Errorf("skills %d, resources %d, prompts %d", s.Skills, s.Resources, s.Prompts)
	}
}

func TestTypeScriptClientHTTP(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	s := runTSClient(t, nil, "--url", h.srv.URL+Path, "--token", "secret-full")
	if s.Transport != "http" {
		t.Errorf("transport %q", s.Transport)
	}
	checkTSSummary(t, s)
	if recs := h.audit.find("tools/call", toolFind); len(recs) == 0 || recs[0].Principal != "full" {
		t.Errorf("the TypeScript client's calls were not audited as token full: %+v", recs)
	}
}

func TestTypeScriptClientStdio(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := runTSClient(t, []string{helperEnv + "=stdio", helperEnv + "_RELOAD=1"},
		"--expect-list-changed", "--stdio", "--", exe, "-test.run=^$")
	if s.Transport != "stdio" || !s.ListChanged {
		t.Errorf("summary %+v", s)
	}
	checkTSSummary(t, s)
}
