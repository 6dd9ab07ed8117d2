package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/config"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/skillmd"
	"github.com/mcpsag/router/internal/store"
	"github.com/mcpsag/router/internal/testlog"
)

// mcpClient is a Go SDK client session with the list_changed notifications it
// received.
type mcpClient struct {
	t       *testing.T
	cs      *mcpsdk.ClientSession
	changed chan string
}

func connectMCP(t *testing.T, tr mcpsdk.Transport) *mcpClient {
	t.Helper()
	c := &mcpClient{t: t, changed: make(chan string, 64)}
	notify := func(what string) {
		select {
		case c.changed <- what:
		default:
		}
	}
	opts := &mcpsdk.ClientOptions{
		PromptListChangedHandler:   func(context.Context, *mcpsdk.PromptListChangedRequest) { notify("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { notify("resources") },
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcptest.Connect(ctx, &mcpsdk.Implementation{Name: "router-e2e", Version: "1"}, opts, tr)
	if err != nil {
		t.Fatalf("MCP connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// call calls a tool and decodes its structured content into out; it fails
// the test on a protocol error, and returns the result.
func (c *mcpClient) call(name string, args map[string]any, out any) *mcpsdk.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			c.t.Fatalf("%s structured content: %v", name, err)
		}
	}
	return res
}

// text returns the first text content of a result.
func text(res *mcpsdk.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			return t.Text
		}
	}
	return ""
}

// exerciseRouter runs the whole surface against a router serving a copy of
// examples/ at ws: every tool, a resource, a prompt, bad input, and a
// list_changed after a new skill appears on disk.
func exerciseRouter(t *testing.T, c *mcpClient, ws string) {
	t.Helper()
	ctx := context.Background()
	tools, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.OutputSchema == nil || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s lacks an output schema or read-only annotations", tool.Name)
		}
	}
	if strings.Join(names, ",") != "find_skills,list_skills,load_skill,read_skill_file" {
		t.Errorf("tools %v (authorize_exec must be absent while skills_exec is off)", names)
	}

	var found struct {
		Candidates []struct{ Name, Why string }
		Abstained  bool
	}
	c.call("find_skills", map[string]any{"task": "fill in a PDF form from a JSON file"}, &found)
	if found.Abstained || len(found.Candidates) == 0 || found.Candidates[0].Name != "pdf-form-filling" || found.Candidates[0].Why == "" {
		t.Errorf("find_skills: %+v", found)
	}
	c.call("find_skills", map[string]any{"task": "what is the capital of France"}, &found)
	if !found.Abstained {
		t.Errorf("find_skills on a task no skill serves did not abstain: %+v", found)
	}

	var loaded struct {
		Content, SHA256 string
		Files           []struct{ Path string }
	}
	res := c.call("load_skill", map[string]any{"name": "pdf-form-filling"}, &loaded)
	if !strings.HasPrefix(loaded.Content, "<skill_content name=\"pdf-form-filling\"") || loaded.SHA256 == "" || len(loaded.Files) == 0 ||
		len(res.Content) != 1 || !strings.Contains(text(res), `"content":"<skill_content name=`) {
		t.Errorf("load_skill: content %.80q, %d files, %d content blocks, text %.120q", loaded.Content, len(loaded.Files), len(res.Content), text(res))
	}

	var file struct{ Content, SHA256 string }
	c.call("read_skill_file", map[string]any{"name": "pdf-form-filling", "path": "references/field-types.md"}, &file)
	if !strings.Contains(file.Content, `path="references/field-types.md"`) || !strings.Contains(file.Content, `sha256="`+file.SHA256+`"`) {
		t.Errorf("read_skill_file: the frame must name the file and its own hash: %.200q (sha256 %s)", file.Content, file.SHA256)
	}

	var listed struct {
		Skills  []struct{ Name string }
		Total   int
		Catalog *struct {
			Text          string
			Included, Cut int
		}
	}
	c.call("list_skills", nil, &listed)
	if len(listed.Skills) < 7 || listed.Catalog != nil {
		t.Errorf("list_skills: %d skills, catalog %+v", len(listed.Skills), listed.Catalog)
	}
	// With budget_chars the catalog replaces the page, and the whole reply
	// fits.
	res = c.call("list_skills", map[string]any{"budget_chars": 1200}, &listed)
	if n := len([]rune(text(res))); n > 1200 || len(listed.Skills) != 0 || listed.Catalog == nil ||
		listed.Catalog.Included == 0 || listed.Catalog.Included+listed.Catalog.Cut != listed.Total {
		t.Errorf("list_skills within 1200 characters: a reply of %d, %d skills, catalog %+v", n, len(listed.Skills), listed.Catalog)
	}

	for _, bad := range []map[string]any{
		{"name": "pdf-form-filling", "path": "../../../etc/passwd"},
		{"name": "pdf-form-filling", "path": "/etc/passwd"},
		{"name": "pdf-form-filling", "path": "references\\..\\..\\x"},
		{"name": "pdf-form-filling", "path": "%2e%2e/x"},
		{"name": "pdf-form-filling", "path": "references/\x00"},
		{"name": "no-such-skill", "path": "SKILL.md"},
	} {
		res := c.call("read_skill_file", bad, nil)
		if !res.IsError || strings.Contains(text(res), ws) || strings.Contains(text(res), "root:") {
			t.Errorf("read_skill_file %q: isError %v, %q", bad["path"], res.IsError, text(res))
		}
	}
	if res := c.call("find_skills", map[string]any{"task": strings.Repeat("x", 1<<20)}, nil); !res.IsError || !strings.Contains(text(res), "task") {
		t.Errorf("a 1 MiB task: isError %v, %q", res.IsError, text(res))
	}

	// A resource reads as the file is on disk.
	rr, err := c.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/references/field-types.md"})
	if want := mustRead(t, filepath.Join(ws, "skills", "pdf-form-filling", "references", "field-types.md")); err != nil || len(rr.Contents) != 1 ||
		rr.Contents[0].Text != string(want) {
		t.Errorf("resource read: %v %+v", err, rr)
	}
	if _, err := c.cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/%2e%2e/%2e%2e/etc/passwd"}); err == nil {
		t.Error("a traversing resource URI was served")
	}
	pr, err := c.cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "pdf-form-filling"})
	if err != nil || len(pr.Messages) == 0 {
		t.Errorf("prompt: %v %+v", err, pr)
	}

	// A new skill on disk reaches the client as a list change.
	dir := filepath.Join(ws, "skills", "terraform-plan-review")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: terraform-plan-review\ndescription: Review terraform plans before apply.\n---\nRead the plan.\n"), 0o644))
	select {
	case <-c.changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no list_changed notification after a new skill appeared")
	}
	daemontest.Eventually(t, 10*time.Second, "the new skill as a prompt", func() bool {
		_, err := c.cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "terraform-plan-review"})
		return err == nil
	})
}

func fastWatch(c *config.Config) {
	c.Watch.Debounce = 100 * time.Millisecond
	c.Watch.RescanInterval = 2 * time.Second
}

func TestMCPOverHTTP(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		fastWatch(c)
	}})
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	c := connectMCP(t, &mcpsdk.StreamableClientTransport{Endpoint: url})
	exerciseRouter(t, c, ws)

	t.Run("a bad Origin is refused", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", "https://evil.example")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("status %d, want 403", res.StatusCode)
		}
	})
}

func TestMCPOverHTTPWithTokens(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	must(t, os.WriteFile(tokens, []byte("tokens:\n"+
		"  - {id: agent, sha256: "+auth.HashToken("agent-secret")+", groups: [match, load], agents: [reviewer]}\n"), 0o600))
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) {
		c.MCP.Addr = "127.0.0.1:0"
		c.Auth.Enabled, c.Auth.TokensFile = true, tokens
	}})
	url := "http://" + r.Main.MCPAddr() + "/mcp"
	res, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("no token: %d %q, want 401 with WWW-Authenticate", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	}
	withToken := &http.Client{Transport: bearer{"agent-secret"}}
	c := connectMCP(t, &mcpsdk.StreamableClientTransport{Endpoint: url + "?agent=reviewer", HTTPClient: withToken})
	var found struct{ Candidates []struct{ Name string } }
	c.call("find_skills", map[string]any{"task": "review this pull request's code"}, &found)
	if len(found.Candidates) == 0 || found.Candidates[0].Name != "code-review-checklist" {
		t.Errorf("the reviewer's own skill: %+v", found)
	}
	if res := c.call("find_skills", map[string]any{"task": "x", "agent": "someone-else"}, nil); !res.IsError {
		t.Error("a token bound to reviewer acted for another agent")
	}
}

type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// routerBinary builds cmd/router once for the tests that run it as a
// subprocess.
var routerBinary = sync.OnceValues(func() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir, err := os.MkdirTemp("", "mcpsag-router-bin-")
	if err != nil {
		return "", err
	}
	exe := filepath.Join(dir, "router")
	out, err := exec.Command("go", "build", "-o", exe, filepath.Join(filepath.Dir(file), "..", "..", "cmd", "router")).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return exe, nil
})

func router(t testing.TB) string {
	t.Helper()
	exe, err := routerBinary()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestMCPOverStdio runs `router mcp` standalone as a host would: a
// subprocess speaking MCP on its stdin and stdout.
func TestMCPOverStdio(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"),
		append(mustRead(t, filepath.Join(ws, ".mcp", ".mcp-config.yaml")), []byte("\nwatch: {debounce: 100ms, rescan_interval: 2s}\n")...), 0o644))
	var stderr testlog.Buffer
	cmd := exec.Command(router(t), "mcp", "--workspace", ws, "--state-dir", t.TempDir())
	cmd.Stderr = &stderr
	c := connectMCP(t, &mcpsdk.CommandTransport{Command: cmd})
	exerciseRouter(t, c, ws)
	if !strings.Contains(stderr.String(), "serving MCP on stdio") {
		t.Errorf("the log did not go to stderr:\n%s", stderr.String())
	}
}

// TestMCPAttached runs `router mcp --connect` against a daemon: the session
// shares the daemon's index, and its list changes are relayed.
func TestMCPAttached(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: fastWatch})
	cmd := exec.Command(router(t), "mcp", "--connect", r.Addr)
	var stderr testlog.Buffer
	cmd.Stderr = &stderr
	c := connectMCP(t, &mcpsdk.CommandTransport{Command: cmd})
	exerciseRouter(t, c, ws)
	if st, err := r.Main.Router().Status(context.Background()); err != nil || st.LastStats.Scanned == 0 {
		t.Errorf("daemon status %v %+v", err, st)
	}
}

// TestTypeScriptClient drives the real router over both transports with the
// official TypeScript SDK: a client no one here wrote.
func TestTypeScriptClient(t *testing.T) {
	node, dir := tsClient(t)
	ws := daemontest.CopyExamples(t)
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.MCP.Addr = "127.0.0.1:0" }})
	for name, args := range map[string][]string{
		"http":  {"--url", "http://" + r.Main.MCPAddr() + "/mcp"},
		"stdio": {"--stdio", "--", router(t), "mcp", "--workspace", ws, "--state-dir", t.TempDir()},
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs"}, args...)...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("TypeScript client: %v\n%s", err, stderr.String())
			}
			var s struct {
				Transport string
				Tools     []string
				Found     []string
			}
			if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
				t.Fatalf("summary %q: %v", stdout.String(), err)
			}
			if s.Transport != name || len(s.Tools) != 4 || len(s.Found) == 0 || s.Found[0] != "pdf-form-filling" {
				t.Errorf("summary %+v", s)
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMCPSessionsShareTheWorkspace: a second standalone session on a
// workspace attaches to the first one's index (no private index), sees the
// same changes, and takes the workspace over when the first one ends; a
// session beside a daemon attaches to the daemon.
func TestMCPSessionsShareTheWorkspace(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"),
		append(mustRead(t, filepath.Join(ws, ".mcp", ".mcp-config.yaml")), []byte("\nwatch: {debounce: 100ms, rescan_interval: 2s}\n")...), 0o644))
	state, tmp := t.TempDir(), t.TempDir()
	session := func(args ...string) (*mcpClient, *testlog.Buffer) {
		var stderr testlog.Buffer
		cmd := exec.Command(router(t), append([]string{"mcp", "--workspace", ws, "--state-dir", state}, args...)...)
		cmd.Stderr = &stderr
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		return connectMCP(t, &mcpsdk.CommandTransport{Command: cmd}), &stderr
	}
	found := func(c *mcpClient) string {
		var out struct{ Candidates []struct{ Name string } }
		res := c.call("find_skills", map[string]any{"task": "fill in a PDF form from a JSON file"}, &out)
		if res.IsError || len(out.Candidates) == 0 {
			return text(res)
		}
		return out.Candidates[0].Name
	}
	first, firstLog := session()
	second, secondLog := session()
	if got := found(second); got != "pdf-form-filling" {
		t.Fatalf("the second session: %q", got)
	}
	if !strings.Contains(secondLog.String(), "shares its index") || strings.Contains(secondLog.String(), "private") {
		t.Errorf("the second session did not attach:\n%s", secondLog.String())
	}
	// A skill added on disk reaches both.
	dir := filepath.Join(ws, "skills", "terraform-plan-review")
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: terraform-plan-review\ndescription: Review terraform plans before apply.\n---\nRead the plan.\n"), 0o644))
	for _, c := range []*mcpClient{first, second} {
		daemontest.Eventually(t, 20*time.Second, "the new skill as a prompt", func() bool {
			_, err := c.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "terraform-plan-review"})
			return err == nil
		})
	}
	// The first session ends: the second takes the workspace over.
	first.cs.Close()
	daemontest.Eventually(t, 30*time.Second, "the second session to take the workspace over", func() bool {
		return strings.Contains(secondLog.String(), "now holds it")
	})
	daemontest.Eventually(t, 30*time.Second, "find_skills after the takeover", func() bool { return found(second) == "pdf-form-filling" })
	if strings.Contains(firstLog.String(), "private") {
		t.Errorf("the first session:\n%s", firstLog.String())
	}

	// Beside a daemon holding another state directory, a session attaches
	// to it.
	state = t.TempDir()
	daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	third, thirdLog := session()
	if got := found(third); got != "pdf-form-filling" || !strings.Contains(thirdLog.String(), "shares its index") {
		t.Errorf("beside a daemon: %q\n%s", got, thirdLog.String())
	}
	if private, _ := filepath.Glob(filepath.Join(tmp, "mcpsag-mcp-*")); len(private) > 0 {
		t.Errorf("private indexes were built: %v", private)
	}
}

// TestMCPSessionBesideASilentHolder: when the process holding the state
// directory does not answer on its socket, the session indexes into a
// private temporary directory and removes it when it ends.
func TestMCPSessionBesideASilentHolder(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	state, tmp := t.TempDir(), t.TempDir()
	db, err := store.Open(state, store.Options{Holder: "a test", ParserVersion: skillmd.Version})
	must(t, err)
	t.Cleanup(func() { db.Close() })
	var stderr testlog.Buffer
	cmd := exec.Command(router(t), "mcp", "--workspace", ws, "--state-dir", state)
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	c := connectMCP(t, &mcpsdk.CommandTransport{Command: cmd})
	var out struct{ Candidates []struct{ Name string } }
	c.call("find_skills", map[string]any{"task": "fill in a PDF form from a JSON file"}, &out)
	if len(out.Candidates) == 0 || !strings.Contains(stderr.String(), "private temporary directory") {
		t.Fatalf("find_skills %+v\n%s", out, stderr.String())
	}
	if private, _ := filepath.Glob(filepath.Join(tmp, "mcpsag-mcp-*")); len(private) != 1 {
		t.Errorf("private indexes while serving: %v", private)
	}
	c.cs.Close()
	daemontest.Eventually(t, 10*time.Second, "the private index to be removed", func() bool {
		private, _ := filepath.Glob(filepath.Join(tmp, "mcpsag-mcp-*"))
		return len(private) == 0
	})
}

// TestMCPAttachedOffersWhatTheTokenAllows: attached with a token of group
// match only, a session lists the tools that token may call, and a call to
// another one says which group it needs, not which gRPC method refused it.
func TestMCPAttachedOffersWhatTheTokenAllows(t *testing.T) {
	ws := daemontest.CopyExamples(t)
	tokens := filepath.Join(t.TempDir(), "tokens.yaml")
	must(t, os.WriteFile(tokens, []byte("tokens:\n  - {id: finder, sha256: "+auth.HashToken("finder-secret")+", groups: [match]}\n"), 0o600))
	r := daemontest.Start(t, ws, daemontest.Options{Configure: func(c *config.Config) { c.Auth.Enabled, c.Auth.TokensFile = true, tokens }})
	cmd := exec.Command(router(t), "mcp", "--connect", r.Addr)
	cmd.Env = append(os.Environ(), "MCPSAG_TOKEN=finder-secret")
	c := connectMCP(t, &mcpsdk.CommandTransport{Command: cmd})
	tools, err := c.cs.ListTools(context.Background(), nil)
	must(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "find_skills,list_skills" {
		t.Errorf("tools %v, want find_skills and list_skills", names)
	}
	res := c.call("load_skill", map[string]any{"name": "pdf-form-filling"}, nil)
	if !res.IsError || !strings.Contains(text(res), "needs token group load") || strings.Contains(text(res), "SkillRouter") {
		t.Errorf("load_skill: %q", text(res))
	}
	if caps := c.cs.InitializeResult().Capabilities; caps.Resources != nil || caps.Prompts != nil {
		t.Errorf("capabilities without group load: %+v", caps)
	}
}
