package daemon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

// extParams and extResult carry the Skills extension's methods in a Go SDK
// client, as a host that implements the extension sends them.
type extParams struct {
	mcpsdk.ParamsBase
	URI    string `json:"uri,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

type extResult struct {
	mcpsdk.ResultBase
	Raw json.RawMessage
}

func (r *extResult) UnmarshalJSON(b []byte) error {
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// extensionClient lets a Go SDK client send the Skills extension's methods.
func extensionClient(c *mcpsdk.Client) error {
	for _, m := range []string{"skills/list", "skills/get", "resources/directory/read"} {
		if err := mcpsdk.AddSendingCustomMethod[*extParams, *extResult](c, m); err != nil {
			return err
		}
	}
	return nil
}

// ext sends one of the Skills extension's methods and decodes its result
// into out (when not nil).
func ext(ctx context.Context, cs *mcpsdk.ClientSession, method string, p extParams, out any) error {
	res, err := mcpsdk.CallCustomMethod[*extParams, *extResult](ctx, cs, method, &p)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(res.Raw, out)
}

// rpcCode returns the JSON-RPC code and message of err, 0 and err's text
// when it is not a JSON-RPC error.
func rpcCode(err error) (int64, string) {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code, je.Message
	}
	if err == nil {
		return 0, ""
	}
	return 0, err.Error()
}

// TestHostFacingWording: what a host reads when it sends something wrong
// names the parameter it sent, as it sent it, and says what to do; the
// words of find_tools speak of tools; a client that sets a log level is
// told when the skills change, and the server declares that it logs.
// Through the Go SDK's client, over HTTP, against a router with one MCP
// server.
func TestHostFacingWording(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	obj := map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string"}}}
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(fmt.Sprintf(
		"watch: {debounce: 100ms, rescan_interval: 2s}\nmcp_servers:\n  github: %s\n",
		scripted(t, &upstreamtest.Raw{Tools: []json.RawMessage{
			rawTool("create_issue", obj, "Create an issue in a GitHub repository"),
			rawTool("merge_pull_request", obj, "Merge a pull request"),
		}}, ", trust: trusted"))), 0o644))
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "wording", Version: "1"}, nil,
		&mcpsdk.StreamableClientTransport{Endpoint: url}, extensionClient)
	must(t, err)
	defer cs.Close()

	t.Run("cursors", func(t *testing.T) {
		lists := map[string]func() error{
			"tools/list":   func() error { _, err := cs.ListTools(ctx, &mcpsdk.ListToolsParams{Cursor: "bogus"}); return err },
			"prompts/list": func() error { _, err := cs.ListPrompts(ctx, &mcpsdk.ListPromptsParams{Cursor: "bogus"}); return err },
			"resources/list": func() error {
				_, err := cs.ListResources(ctx, &mcpsdk.ListResourcesParams{Cursor: "bogus"})
				return err
			},
			"resources/templates/list": func() error {
				_, err := cs.ListResourceTemplates(ctx, &mcpsdk.ListResourceTemplatesParams{Cursor: "bogus"})
				return err
			},
			"skills/list": func() error { return ext(ctx, cs, "skills/list", extParams{Cursor: "bogus"}, nil) },
			"resources/directory/read": func() error {
				return ext(ctx, cs, "resources/directory/read", extParams{URI: "skill://pdf-form-filling", Cursor: "bogus"}, nil)
			},
		}
		for method, call := range lists {
			code, msg := rpcCode(call())
			want := fmt.Sprintf(`cursor "bogus" is not one this server gave: pass the nextCursor of the previous %s page`, method)
			if code != -32602 || !strings.Contains(msg, want) || strings.Contains(msg, "page_token") {
				t.Errorf("%s: %d %q, want -32602 and %q", method, code, msg, want)
			}
		}
	})

	t.Run("URIs", func(t *testing.T) {
		for uri, want := range map[string]string{
			"skill://data tools/a b.md":                         `"skill://data tools/a b.md" is not a valid URI: percent-encode the skill name and each path segment, as in skill://data%20tools/a%20b.md`,
			"file:///etc/passwd":                                `which serves skill://NAME/SKILL.md and skill://NAME/PATH`,
			"skill://" + strings.Repeat("a", 300) + "/SKILL.md": "invalid_argument: uri: 300 bytes long",
			"skill://pdf-form-filling/.env":                     `permission_denied: uri: ".env" names a hidden file`,
		} {
			_, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri})
			if code, msg := rpcCode(err); code != -32602 || !strings.Contains(msg, want) {
				t.Errorf("resources/read %.60s: %d %q, want -32602 and %q", uri, code, msg, want)
			}
		}
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "read_skill_file", Arguments: map[string]any{"name": "pdf-form-filling", "path": "../x"}})
		must(t, err)
		if got := text(res); !res.IsError || !strings.HasPrefix(got, `permission_denied: path: "../x" leaves the skill folder`) {
			t.Errorf("read_skill_file ../x: %q", got)
		}
	})

	t.Run("find_tools", func(t *testing.T) {
		daemontest.Eventually(t, 30*time.Second, "find_tools to be offered", func() bool {
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				return false
			}
			for _, tool := range tools.Tools {
				if tool.Name == "find_tools" {
					return true
				}
			}
			return false
		})
		for _, task := range []string{"open an issue about the flaky test in the github repository", "bake a sourdough loaf"} {
			res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "find_tools", Arguments: map[string]any{"task": task}})
			must(t, err)
			var out struct {
				VerdictDetail string `json:"verdict_detail"`
				AbstainDetail string `json:"abstain_detail"`
			}
			b, _ := json.Marshal(res.StructuredContent)
			must(t, json.Unmarshal(b, &out))
			words := out.VerdictDetail + " " + out.AbstainDetail
			t.Logf("find_tools %q: %s", task, words)
			if res.IsError || strings.Contains(words, "skill") || !strings.Contains(words, "tool") {
				t.Errorf("find_tools %q: %q", task, words)
			}
		}
	})

	t.Run("logging", func(t *testing.T) {
		// Protocol 2026-07-28 deprecates logging/setLevel: a client of
		// 2025-11-25 sets the level of its session.
		logs := make(chan string, 16)
		c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "wording-logs", Version: "1"}, &mcpsdk.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, req *mcpsdk.LoggingMessageRequest) {
				logs <- fmt.Sprintf("%s %v", req.Params.Level, req.Params.Data)
			},
		})
		cs, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url}, &mcpsdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		must(t, err)
		defer cs.Close()
		if cs.InitializeResult().Capabilities.Logging == nil {
			t.Fatalf("no logging capability: %+v", cs.InitializeResult().Capabilities)
		}
		must(t, cs.SetLoggingLevel(ctx, &mcpsdk.SetLoggingLevelParams{Level: "info"}))
		dir := filepath.Join(ws, "skills", "terraform-plan-review")
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: terraform-plan-review\ndescription: Review terraform plans.\n---\nRead the plan.\n"), 0o644))
		select {
		case msg := <-logs:
			if !strings.Contains(msg, "info the skills changed: 1 added (terraform-plan-review), 0 removed") {
				t.Errorf("log message %q", msg)
			}
		case <-time.After(30 * time.Second):
			t.Error("no log message within 30s of a new skill")
		}
	})
}

// TestNoToolIsVisible: find_tools asked by a caller whose token sees no
// MCP server abstains with reason no_tools and words of tools (it said
// no_skills, the reason of a caller that sees no skill).
func TestNoToolIsVisible(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	obj := map[string]any{"type": "object"}
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(fmt.Sprintf(
		"mcp_servers:\n  github: %s\n",
		scripted(t, &upstreamtest.Raw{Tools: []json.RawMessage{rawTool("create_issue", obj, "Create an issue in a GitHub repository")}}, ", trust: trusted"))), 0o644))
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	must(t, os.WriteFile(tokens, []byte("tokens:\n  - {id: gitlab-only, sha256: "+auth.HashToken("gitlab-secret")+", groups: [match], servers: [gitlab]}\n"), 0o600))
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Auth.Enabled, c.Auth.TokensFile = true, tokens
	}})
	c := connectMCP(t, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp", HTTPClient: &http.Client{Transport: bearer{"gitlab-secret"}}})
	daemontest.Eventually(t, 30*time.Second, "find_tools to be offered", func() bool {
		tools, err := c.cs.ListTools(context.Background(), nil)
		return err == nil && slices.ContainsFunc(tools.Tools, func(tool *mcpsdk.Tool) bool { return tool.Name == "find_tools" })
	})
	var out struct {
		Abstained     bool   `json:"abstained"`
		AbstainReason string `json:"abstain_reason"`
		AbstainDetail string `json:"abstain_detail"`
		VerdictDetail string `json:"verdict_detail"`
	}
	if res := c.call("find_tools", map[string]any{"task": "open an issue in the github repository"}, &out); res.IsError {
		t.Fatalf("find_tools: %s", text(res))
	}
	if !out.Abstained || out.AbstainReason != "no_tools" || out.AbstainDetail != "no tool is visible to this caller" || strings.Contains(out.VerdictDetail, "skill") {
		t.Errorf("find_tools with a token that sees no server: %+v; want abstained, no_tools, \"no tool is visible to this caller\"", out)
	}
}
