package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

func TestInitialize(t *testing.T) {
	h := newHarness(t)
	init := h.cs.InitializeResult()
	if init.Instructions == "" || !strings.Contains(init.Instructions, "find_skills") {
		t.Errorf("instructions = %q, want guidance naming find_skills", init.Instructions)
	}
	caps := init.Capabilities
	if caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("tools capability = %+v, want listChanged", caps.Tools)
	}
	if caps.Prompts == nil || !caps.Prompts.ListChanged || caps.Resources == nil || !caps.Resources.ListChanged {
		t.Errorf("prompts %+v, resources %+v: want both with listChanged", caps.Prompts, caps.Resources)
	}
	if caps.Logging == nil {
		t.Error("no logging capability: logging/setLevel is answered and changes are logged")
	}
	if init.ServerInfo.Name != "mcpsag-router" {
		t.Errorf("server name %q", init.ServerInfo.Name)
	}
}

func TestToolsList(t *testing.T) {
	h := newHarness(t)
	res, err := h.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.OutputSchema == nil {
			t.Errorf("%s: no outputSchema", tool.Name)
		}
		if len(tool.Description) < 80 {
			t.Errorf("%s: description %q does not say when to call it", tool.Name, tool.Description)
		}
		a := tool.Annotations
		if a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint || a.DestructiveHint == nil || *a.DestructiveHint {
			t.Errorf("%s: annotations %+v, want readOnly, idempotent, closed world, not destructive", tool.Name, a)
		}
	}
	slices.Sort(names)
	if want := []string{toolFind, toolList, toolLoad, toolRead}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v (authorize_exec only while skills_exec is on)", names, want)
	}
	for _, tool := range res.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		var s struct {
			Required []string `json:"required"`
		}
		_ = json.Unmarshal(schema, &s)
		want := map[string][]string{toolFind: {"task"}, toolList: nil, toolLoad: {"name"}, toolRead: {"name", "path"}}[tool.Name]
		if !slices.Equal(s.Required, want) {
			t.Errorf("%s: required %v, want %v", tool.Name, s.Required, want)
		}
	}
}

func TestFindSkills(t *testing.T) {
	h := newHarness(t)
	var out findOutput
	res := h.ok(toolFind, map[string]any{"task": "fill in a PDF form from JSON"}, &out)
	if got := lastText(t, res); !strings.HasPrefix(got, "Confident match:") {
		t.Errorf("last text block %q, want the verdict in a sentence", got)
	}
	if out.Abstained || len(out.Candidates) == 0 || out.Candidates[0].Name != "pdf-form-filling" {
		t.Fatalf("candidates = %+v", out)
	}
	if out.Verdict != "confident" || out.VerdictDetail == "" {
		t.Errorf("verdict %q (%q), want confident with its reason", out.Verdict, out.VerdictDetail)
	}
	c := out.Candidates[0]
	if c.URI != "skill://pdf-form-filling/SKILL.md" || c.Trust != "trusted" || c.Source.Kind != "project" || c.Why == "" || c.Score <= 0 {
		t.Errorf("candidate = %+v", c)
	}
	if out.Generation != 1 {
		t.Errorf("generation = %d", out.Generation)
	}

	res = h.ok(toolFind, map[string]any{"task": "what is the capital of France"}, &out)
	if !out.Abstained || out.AbstainReason != "no_match" || len(out.Candidates) != 0 || out.Verdict != "no_skill" {
		t.Errorf("abstention = %+v", out)
	}
	if got := lastText(t, res); got != "No skill fits this task: go ahead without one." {
		t.Errorf("abstention sentence %q", got)
	}

	h.ok(toolFind, map[string]any{"task": "review pull requests", "agent": "reviewer", "top_k": 1}, &out)
	if len(out.Candidates) != 1 || out.Candidates[0].Name != "reviewer-checklist" || out.Candidates[0].Source.Agent != "reviewer" {
		t.Errorf("agent-scoped match = %+v", out.Candidates)
	}

	// Every call reaches the router labelled as an MCP call.
	h.cat.mu.Lock()
	origins := slices.Clone(h.cat.origins)
	h.cat.mu.Unlock()
	if len(origins) == 0 {
		t.Fatal("no calls recorded")
	}
	for _, o := range origins {
		if o.Transport != "mcp" || o.Principal != "" || o.Peer != "" {
			t.Errorf("origin = %+v, want transport mcp, anonymous, no peer (in-memory)", o)
		}
	}
}

func TestLoadSkill(t *testing.T) {
	h := newHarness(t)
	var out loadOutput
	res := h.ok(toolLoad, map[string]any{"name": "pdf-form-filling"}, &out)
	s, _ := h.cat.lookup("pdf-form-filling", "")
	want := fakeFrame("skill_content", s, "", h.cat.bodies[key(s.Name, "")])
	if out.Content != want {
		t.Errorf("content changed on the way:\n got %q\nwant %q", out.Content, want)
	}
	if out.Truncated || out.TokenCounting != skill.TokenCounting || out.SHA256 != s.ContentHash || len(out.Files) != 3 {
		t.Errorf("load = %+v", out)
	}
	// The files are listed once, in the JSON; each URI reads.
	if len(res.Content) != 1 {
		t.Errorf("%d content blocks, want the JSON text alone", len(res.Content))
	}
	var uris []string
	for _, f := range out.Files {
		uris = append(uris, f.URI)
		if _, err := h.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: f.URI}); err != nil {
			t.Errorf("file %s does not read: %v", f.URI, err)
		}
	}
	wantURIs := []string{"skill://pdf-form-filling/assets/logo.png", "skill://pdf-form-filling/references/field-types.md", "skill://pdf-form-filling/scripts/fill.py"}
	if !slices.Equal(uris, wantURIs) {
		t.Errorf("files = %v, want %v", uris, wantURIs)
	}
	// The model reads the delimiters the instructions name, not \u003c.
	if !strings.Contains(text(res), `"content":"<skill_content name=`) || strings.Contains(text(res), `\u003c`) {
		t.Errorf("the text block escapes the delimiters:\n%.200s", text(res))
	}
	if strings.Contains(text(res), "secret-host-path") {
		// The router's frame may name the root; the front adds no paths.
		// The fake's frame does not, so any host path came from the front.
		t.Errorf("a host path leaked into the result")
	}

	// The budget bounds the whole reply, not only the body.
	res = h.ok(toolLoad, map[string]any{"name": "kubernetes-debugging", "token_budget": 200}, &out)
	if n := skill.EstimateTokens(text(res)); !out.Truncated || out.TokenBudget != 200 || n > 200 || out.TotalTokens <= out.Tokens {
		t.Errorf("budgeted load = truncated %v, reply %d tokens, body %d/%d, budget %d", out.Truncated, n, out.Tokens, out.TotalTokens, out.TokenBudget)
	}
	msg := h.toolErr(toolLoad, map[string]any{"name": "kubernetes-debugging", "token_budget": 50})
	if !strings.HasPrefix(msg, "invalid_argument: token_budget: 50 is too small for this skill's reply, which takes ") {
		t.Errorf("a budget smaller than the reply without its body: %q", msg)
	}

	h.ok(toolLoad, map[string]any{"name": "learned-trick"}, &out)
	if out.Trust != "untrusted" || !strings.Contains(out.Content, `trust="untrusted"`) {
		t.Errorf("learned skill: trust %q, content %q", out.Trust, out.Content)
	}
}

func TestReadSkillFile(t *testing.T) {
	h := newHarness(t)
	var out readOutput
	h.ok(toolRead, map[string]any{"name": "pdf-form-filling", "path": "references/field-types.md"}, &out)
	if !strings.HasPrefix(out.Content, "<skill_resource ") || !strings.Contains(out.Content, "Text, checkbox, radio.") || out.DataBase64 != "" {
		t.Errorf("text file = %+v", out)
	}
	var bin readOutput
	h.ok(toolRead, map[string]any{"name": "pdf-form-filling", "path": "assets/logo.png"}, &bin)
	data, err := base64.StdEncoding.DecodeString(bin.DataBase64)
	if err != nil || string(data) != string(h.cat.files[key("pdf-form-filling", "")]["assets/logo.png"]) || bin.Content != "" || bin.MediaType != "image/png" {
		t.Errorf("binary file = %+v (%v)", bin, err)
	}
	msg := h.toolErr(toolRead, map[string]any{"name": "pdf-form-filling", "path": "references/missing.md"})
	if !strings.HasPrefix(msg, "not_found: ") {
		t.Errorf("missing file: %q", msg)
	}
}

func TestListSkills(t *testing.T) {
	h := newHarness(t)
	var out listOutput
	h.ok(toolList, map[string]any{}, &out)
	var names []string
	for _, s := range out.Skills {
		names = append(names, s.Name)
	}
	want := []string{"data tools", "internal-lint", "kubernetes-debugging", "learned-trick", "pdf-form-filling", "release-notes"}
	if !slices.Equal(names, want) || out.Total != len(want) || out.Catalog != nil {
		t.Errorf("list = %v (total %d, catalog %v), want %v", names, out.Total, out.Catalog, want)
	}
	if out.Skills[0].URI != "skill://data%20tools/SKILL.md" {
		t.Errorf("uri of a name with a space = %q", out.Skills[0].URI)
	}
	// With budget_chars, the whole reply fits: the catalog replaces the
	// page, and what it cuts is counted.
	for _, budget := range []int{120, 400, 4000} {
		var out listOutput
		res := h.ok(toolList, map[string]any{"budget_chars": budget}, &out)
		n := utf8.RuneCountInString(res.Content[0].(*mcpsdk.TextContent).Text)
		if out.Catalog == nil || n > budget || out.Catalog.Budget != budget || len(out.Skills) != 0 ||
			out.Catalog.Included+out.Catalog.Cut != out.Total || budget == 4000 && out.Catalog.Cut != 0 {
			t.Errorf("budget_chars %d: a reply of %d characters, catalog %+v, %d skills", budget, n, out.Catalog, len(out.Skills))
		}
	}
	h.ok(toolList, map[string]any{"agent": "reviewer"}, &out)
	if !slices.ContainsFunc(out.Skills, func(s summaryOut) bool { return s.Name == "reviewer-checklist" }) {
		t.Errorf("agent reviewer does not see its skill: %+v", out.Skills)
	}
	msg := h.toolErr(toolList, map[string]any{"page_token": "not-a-token"})
	if !strings.HasPrefix(msg, "invalid_argument: page_token: ") {
		t.Errorf("bad page token: %q", msg)
	}
}

func TestAuthorizeExecFollowsFlag(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	args := map[string]any{"skill": "pdf-form-filling", "script": "scripts/fill.py"}
	// Not offered, and a call says why rather than "unknown tool".
	if msg := h.toolErr(toolExec, args); !strings.Contains(msg, "feature flag skills_exec is off") {
		t.Fatalf("authorize_exec while skills_exec is off: %q", msg)
	}

	// A generation that changes only the flag changes only the tools.
	h.cat.publish(func(c *catalog) { c.flags.SkillsExec = true })
	h.waitChanged("tools")
	var out execOutput
	h.ok(toolExec, args, &out)
	if !out.Allowed || out.DecisionID == "" || out.Message != "allowlisted by mcp:test-client" {
		t.Errorf("decision = %+v", out)
	}
	h.ok(toolExec, map[string]any{"skill": "pdf-form-filling", "script": "scripts/other.sh"}, &out)
	if out.Allowed || out.Reason != string(skill.DenyNotAllowlisted) {
		t.Errorf("decision = %+v", out)
	}
	tools, err := h.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == toolExec && (tool.Annotations.ReadOnlyHint || *tool.Annotations.DestructiveHint || *tool.Annotations.OpenWorldHint) {
			t.Errorf("authorize_exec annotations %+v: it records a decision, destroys nothing, reaches nothing outside", tool.Annotations)
		}
	}

	h.cat.publish(func(c *catalog) { c.flags.SkillsExec = false })
	h.waitChanged("tools")
	h.quiet(100 * time.Millisecond)
	if msg := h.toolErr(toolExec, args); !strings.Contains(msg, "skills_exec is off") {
		t.Errorf("authorize_exec after skills_exec went off: %q", msg)
	}
}

// TestFlagWithoutGeneration: turning skills_exec on changes the tools
// offered (and notifies) without waiting for a new index generation.
func TestFlagWithoutGeneration(t *testing.T) {
	h := newHarness(t, func(o *Options, _ *View) { o.PollInterval = 20 * time.Millisecond })
	h.cat.mu.Lock()
	h.cat.flags.SkillsExec = true
	gen := h.cat.gen
	h.cat.mu.Unlock()
	h.waitChanged("tools")
	var out execOutput
	h.ok(toolExec, map[string]any{"skill": "pdf-form-filling", "script": "scripts/fill.py"}, &out)
	if !out.Allowed {
		t.Errorf("decision = %+v", out)
	}
	if h.cat.gen != gen {
		t.Fatal("the test published a generation")
	}
}

// lastText returns a tool result's last content block, which must be
// text.
func lastText(t *testing.T, res *mcpsdk.CallToolResult) string {
	t.Helper()
	if len(res.Content) < 2 {
		t.Fatalf("%d content blocks, want the structured output and the verdict", len(res.Content))
	}
	tc, ok := res.Content[len(res.Content)-1].(*mcpsdk.TextContent)
	if !ok {
		t.Fatalf("last content block is %T, want text", res.Content[len(res.Content)-1])
	}
	return tc.Text
}

// TestVerdictSentences states each verdict in its own words.
func TestVerdictSentences(t *testing.T) {
	for _, tc := range []struct {
		v    skill.Verdict
		want string
	}{
		{skill.VerdictConfident, "Confident match: the first tool below very likely fits the task."},
		{skill.VerdictLowConfidence, "Low-confidence candidates: these tools may not fit the task. Check their descriptions and " +
			"use one only if it clearly applies; otherwise go ahead without a tool."},
		{skill.VerdictNoSkill, "No tool fits this task: go ahead without one."},
	} {
		if got := verdictSentence(&skill.MatchResult{Verdict: tc.v}, "tool"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.v, got, tc.want)
		}
	}
}
