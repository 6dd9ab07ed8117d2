package mcp

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// toolEntry is a tool as the router serves it.
func toolEntry(server, name, desc, schema string, trusted bool) *skill.Skill {
	yes := true
	return &skill.Skill{Name: server + "." + name, Kind: skill.EntryTool, Root: skill.Root{Kind: skill.KindServer, Display: server},
		Frontmatter: skill.Frontmatter{Description: desc},
		Tool: &skill.Tool{Server: server, Name: name, InputSchema: json.RawMessage(schema), Trusted: trusted,
			Hints: skill.ToolHints{ReadOnly: true, Destructive: &yes, Title: "hint"}}}
}

// newToolsHarness is a harness whose fake router serves two tools: find_tools
// matches them, call_tool calls them while flag tools_call is on. With
// servers false the router reports no MCP server until servers is set.
func newToolsHarness(t testing.TB, servers *atomic.Bool) (*harness, *[]skill.ToolCall) {
	cat := newCatalog()
	fake := cat.router()
	calls := withTools(fake, servers)
	return newHarnessOver(t, cat, fake), calls
}

// withTools makes fake serve two tools (see newToolsHarness).
func withTools(fake *fakeRouter, servers *atomic.Bool) *[]skill.ToolCall {
	var mu sync.Mutex
	var calls []skill.ToolCall
	// The schema's keys are deliberately unsorted: it must come back verbatim.
	gh := toolEntry("gh", "create_issue", "Create an issue", `{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title"]}`, true)
	fs := toolEntry("fs", "read_file", "Read a file", `{"type":"object"}`, false)
	inner := fake.StatusFunc
	fake.StatusFunc = func(ctx context.Context) (*skill.Status, error) {
		st, err := inner(ctx)
		if err == nil && servers.Load() {
			st.Tools, st.Servers = 2, []skill.ServerStatus{{Name: "gh"}, {Name: "fs"}}
		}
		return st, err
	}
	match := fake.MatchFunc
	fake.MatchFunc = func(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
		if req.Options.Kinds != skill.KindsTools {
			return match(ctx, req)
		}
		return &skill.MatchResult{Generation: 9, Candidates: []skill.Candidate{{Skill: gh, Fused: 0.8, Reason: "r"}, {Skill: fs, Fused: 0.5}}}, nil
	}
	list := fake.ListFunc
	fake.ListFunc = func(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
		if req.Kinds != skill.KindsTools {
			return list(ctx, req)
		}
		return &skill.ListResult{Skills: []*skill.Skill{fs, gh}, Total: 2, Generation: 9}, nil
	}
	fake.CallToolFunc = func(ctx context.Context, c skill.ToolCall) (*skill.ToolResult, error) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
		if c.Name == "fs.read_file" {
			return nil, skill.Errorf(skill.CodePermissionDenied, "fs.read_file is not in ALLOWLIST.txt").WithReason(skill.ReasonToolNotAllowlisted)
		}
		return &skill.ToolResult{Name: c.Name, IsError: true, Truncated: true, StructuredContent: json.RawMessage(`{"n":1}`),
			Content: []skill.ToolContent{{Type: "text", Text: "<tool_result>x</tool_result>"}, {Type: "image", Data: []byte{1, 2}, MIMEType: "image/png"},
				{Type: "resource_link", URI: "file:///a", Name: "a"}}}, nil
	}
	return &calls
}

func TestFindToolsAndCallTool(t *testing.T) {
	var servers atomic.Bool
	h, calls := newToolsHarness(t, &servers)
	if msg := h.toolErr(toolFindTools, map[string]any{"task": "x"}); !strings.Contains(msg, "no MCP servers") {
		t.Fatalf("find_tools with no MCP servers configured: %q", msg)
	}
	servers.Store(true)
	h.cat.publish(nil)
	h.waitChanged("tools")

	res := h.call(toolFindTools, map[string]any{"task": "open an issue"})
	if res.IsError {
		t.Fatalf("find_tools: %s", text(res))
	}
	// The text block carries the structured content as sent (a client's
	// decoder would sort the keys of the structured content).
	if !strings.Contains(text(res), `"inputSchema":{"type":"object","properties":{"title":{"type":"string"},"body":{"type":"string"}},"required":["title"]}`) {
		t.Errorf("the schema is not verbatim:\n%s", text(res))
	}
	var out findToolsOutput
	h.ok(toolFindTools, map[string]any{"task": "open an issue"}, &out)
	if len(out.Tools) != 2 || out.Tools[0].Name != "gh__create_issue" || out.Tools[0].Entry != "gh.create_issue" || out.Tools[0].Trust != "trusted" || out.Tools[0].Annotations == nil ||
		out.Tools[1].Annotations != nil || out.Tools[1].Trust != "untrusted" || out.Generation != 9 {
		t.Errorf("find_tools: %+v", out)
	}

	// call_tool waits for tools_call.
	if msg := h.toolErr(toolCall, map[string]any{"name": "gh.create_issue"}); !strings.Contains(msg, "TOOLS_CALL_DISABLED") {
		t.Fatalf("call_tool while tools_call is off: %q", msg)
	}
	h.cat.publish(func(c *catalog) { c.flags.ToolsCall = true })
	h.waitChanged("tools")
	// Called by the name find_tools gave, the call reaches the entry.
	res = h.call(toolCall, map[string]any{"name": "gh__create_issue", "arguments": map[string]any{"title": "t"}})
	if first, _ := res.Content[0].(*mcpsdk.TextContent); !res.IsError || len(res.Content) != 4 || first == nil || first.Text != "<tool_result>x</tool_result>" ||
		!strings.Contains(text(res), "cut this result") {
		t.Errorf("call_tool: isError %v, %d blocks, %q", res.IsError, len(res.Content), text(res))
	}
	if img, ok := res.Content[1].(*mcpsdk.ImageContent); !ok || img.MIMEType != "image/png" {
		t.Errorf("image block %#v", res.Content[1])
	}
	if got := (*calls)[0]; string(got.Arguments) != `{"title":"t"}` || got.Caller != "mcp:test-client" {
		t.Errorf("the router got %+v", got)
	}
	if msg := h.toolErr(toolCall, map[string]any{"name": "fs.read_file"}); !strings.Contains(msg, "permission_denied") || !strings.Contains(msg, "TOOL_NOT_ALLOWLISTED") {
		t.Errorf("refused call: %q", msg)
	}
	var seen []string
	for _, rec := range h.audit.find("tools/call", toolCall) {
		if rec.Skill != "" {
			seen = append(seen, rec.Skill+":"+rec.Outcome)
		}
	}
	if strings.Join(seen, " ") != "gh.create_issue:tool_error fs.read_file:permission_denied" {
		t.Errorf("audit %v", seen)
	}

	h.cat.publish(func(c *catalog) { c.flags.ToolsCall = false })
	h.waitChanged("tools")
	if msg := h.toolErr(toolCall, map[string]any{"name": "gh.create_issue"}); !strings.Contains(msg, "TOOLS_CALL_DISABLED") {
		t.Errorf("call_tool after tools_call went off: %q", msg)
	}
}

func TestSkillToolsAskForSkills(t *testing.T) {
	cat := newCatalog()
	fake := cat.router()
	var kinds []skill.KindFilter
	match, list := fake.MatchFunc, fake.ListFunc
	var mu sync.Mutex
	fake.MatchFunc = func(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
		mu.Lock()
		kinds = append(kinds, req.Options.Kinds)
		mu.Unlock()
		return match(ctx, req)
	}
	fake.ListFunc = func(ctx context.Context, req skill.ListRequest) (*skill.ListResult, error) {
		mu.Lock()
		kinds = append(kinds, req.Kinds)
		mu.Unlock()
		return list(ctx, req)
	}
	h := newHarnessOver(t, cat, fake)
	var found findOutput
	var listed listOutput
	h.ok(toolFind, map[string]any{"task": "fill a pdf form"}, &found)
	h.ok(toolList, map[string]any{}, &listed)
	mu.Lock()
	defer mu.Unlock()
	for _, k := range kinds {
		if k != skill.KindsSkills {
			t.Errorf("a skill tool asked the router for kinds %q", k)
		}
	}
	if len(kinds) < 2 {
		t.Errorf("%d router calls seen", len(kinds))
	}
}

func TestHostToolName(t *testing.T) {
	long := strings.Repeat("x", 70)
	for entry, want := range map[string]string{
		"github.create_issue":   "github__create_issue",
		"everything.get-sum":    "everything__get-sum",
		"fs.read.text":          "fs__read_text_",
		"srv." + long:           "srv__" + long[:50] + "_",
		"srv.has_space_47b5c36": "srv__has_space_47b5c36",
	} {
		got := hostToolName(entry)
		if !strings.HasPrefix(got, want) || len(got) > maxHostToolName || !regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`).MatchString(got) {
			t.Errorf("%s: %s, want %s…, at most 64 of [A-Za-z0-9_-]", entry, got, want)
		}
	}
	if a, b := hostToolName("fs.read.text"), hostToolName("fs.read_text"); a == b {
		t.Errorf("two entries share the name %s", a)
	}
}
