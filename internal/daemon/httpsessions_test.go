package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// runNode runs one of the TypeScript SDK client's scripts and returns what
// it printed on stdout; the test fails when it exits with an error.
func runNode(t *testing.T, node, dir string, timeout time.Duration, script string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", script, args, err, stderr.String())
	}
	return stdout.Bytes()
}

// TestTypeScriptSessionErrors: the TypeScript SDK's transport, sending
// without a session, with one the router never opened and with one it
// closed, gets HTTP 400, 404 and 404, each with JSON-RPC -32600 and a
// message that names the header.
func TestTypeScriptSessionErrors(t *testing.T) {
	node, dir := tsClient(t)
	r := daemontest.Start(t, daemontest.CopyExamples(t), daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	out := runNode(t, node, dir, time.Minute, "sessions.mjs", "--url", "http://"+r.Main.MCPAddr()+"/mcp")
	type refusal struct {
		Status  int
		ID      any
		Code    int
		Message string
	}
	var s struct{ NoSession, UnknownSession, ClosedSession refusal }
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("summary %q: %v", out, err)
	}
	for name, tc := range map[string]struct {
		got    refusal
		status int
		want   string
	}{
		"no session":      {s.NoSession, 400, `"tools/list" needs a session and the request has no Mcp-Session-Id header`},
		"unknown session": {s.UnknownSession, 404, `Mcp-Session-Id "no-such-session" names no live session`},
		"closed session":  {s.ClosedSession, 404, "start a new session with initialize"},
	} {
		if tc.got.Status != tc.status || tc.got.Code != -32600 || !strings.Contains(tc.got.Message, tc.want) {
			t.Errorf("%s: %+v, want HTTP %d, code -32600 and %q", name, tc.got, tc.status, tc.want)
		}
	}
}
