package daemon_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/daemon/daemontest"
)

// npmServers returns node and the entry points of the MCP servers
// .ci/run installs from testdata/mcp-servers (pinned by its package-lock.json),
// or skips.
func npmServers(t *testing.T) (node, everything, filesystem string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the tests against real MCP servers need Node 18 or later")
	}
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata", "mcp-servers", "node_modules", "@modelcontextprotocol")
	everything = filepath.Join(dir, "server-everything", "dist", "index.js")
	filesystem = filepath.Join(dir, "server-filesystem", "dist", "index.js")
	for _, p := range []string{everything, filesystem} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("the MCP test servers are not installed: run 'npm ci' in testdata/mcp-servers (.ci/run does): %v", err)
		}
	}
	return node, everything, filesystem
}

// startEverythingHTTP runs the everything server over Streamable HTTP and
// returns its URL once it accepts connections.
func startEverythingHTTP(t *testing.T, node, everything string) string {
	t.Helper()
	addr := daemontest.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(node, everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return "http://" + addr + "/mcp"
		}
		if time.Now().After(deadline) {
			t.Fatalf("the everything server did not listen on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitServers polls Status until every named server is ready.
func waitServers(t *testing.T, c routerv1.SkillRouterClient, names ...string) *routerv1.StatusResponse {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ready := 0
		for _, s := range st.GetServers() {
			if slices.Contains(names, s.GetName()) && s.GetState() == routerv1.ServerState_SERVER_STATE_READY && s.GetTools() > 0 {
				ready++
			}
		}
		if ready == len(names) && st.GetTools() > 0 {
			return st
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(st.GetServers(), "", "  ")
			t.Fatalf("servers not ready:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func toolList(t *testing.T, c routerv1.SkillRouterClient) map[string]*routerv1.SkillSummary {
	t.Helper()
	out := map[string]*routerv1.SkillSummary{}
	req := &routerv1.ListSkillsRequest{Kinds: routerv1.KindFilter_KIND_FILTER_TOOLS, PageSize: 1000}
	for {
		res, err := c.ListSkills(ctx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range res.GetSkills() {
			out[s.GetName()] = s
		}
		if res.GetNextPageToken() == "" {
			return out
		}
		req.PageToken = res.GetNextPageToken()
	}
}

func reasonOf(err error) string {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// TestRealMCPServers connects the router to MCP servers no one here wrote,
// installed from npm: the everything server over stdio and Streamable HTTP,
// and the filesystem server rooted in a temporary folder.
func TestRealMCPServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node MCP servers")
	}
	node, everything, filesystem := npmServers(t)
	httpURL := startEverythingHTTP(t, node, everything)
	ws := daemontest.CopyExamples(t)
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("the launch code is 1234\n"), 0o644))
	cfg := fmt.Sprintf(`mcp:
  addr: 127.0.0.1:0
flags:
  tools_call: true
mcp_servers:
  everything:
    command: %[1]q
    args: [%[2]q, stdio]
    trust: trusted
    disabled_tools: [get-env, "trigger-*"]
  fs:
    command: %[1]q
    args: [%[3]q, %[4]q]
    enabled_tools: ["read_*", "list_*", search_files]
    disabled_tools: [read_media_file]
  web:
    url: %[5]q
    trust: trusted
    enabled_tools: [echo, get-sum]
`, node, everything, filesystem, root, httpURL)
	must(t, os.MkdirAll(filepath.Join(ws, ".mcp"), 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(cfg), 0o644))
	allow := filepath.Join(ws, "skills", "ALLOWLIST.txt")
	must(t, os.WriteFile(allow, []byte("tool:everything.*\ntool:web.echo\n"), 0o644))

	r := daemontest.Start(t, ws, daemontest.Options{})
	c := r.Client
	st := waitServers(t, c, "everything", "fs", "web")

	t.Run("status", func(t *testing.T) {
		byName := map[string]*routerv1.ServerStatus{}
		for _, s := range st.GetServers() {
			byName[s.GetName()] = s
		}
		ev := byName["everything"]
		if ev.GetTransport() != "stdio" || ev.GetTrust() != routerv1.Trust_TRUST_TRUSTED || ev.GetResources() <= 0 || ev.GetPrompts() <= 0 ||
			ev.GetServerName() == "" || ev.GetToolsFiltered() == 0 {
			t.Errorf("everything: %+v", ev)
		}
		if fs := byName["fs"]; fs.GetTrust() != routerv1.Trust_TRUST_UNTRUSTED || fs.GetToolsFiltered() == 0 {
			t.Errorf("fs: %+v", fs)
		}
		if web := byName["web"]; web.GetTransport() != "http" || web.GetTools() != 2 || !strings.HasPrefix(web.GetEndpoint(), "http://127.0.0.1:") ||
			strings.Contains(web.GetEndpoint(), "/mcp") {
			t.Errorf("web: %+v", web)
		}
		all, _ := json.Marshal(st.GetServers())
		if strings.Contains(string(all), root) || strings.Contains(string(all), everything) {
			t.Errorf("status shows a command or argument: %s", all)
		}
	})

	t.Run("tools show up, filtered", func(t *testing.T) {
		tools := toolList(t, c)
		for _, want := range []string{"everything.echo", "everything.get-sum", "fs.read_text_file", "fs.list_directory", "web.echo", "web.get-sum"} {
			tl, ok := tools[want]
			if !ok {
				t.Errorf("%s is not listed", want)
				continue
			}
			var schema map[string]any
			if err := json.Unmarshal([]byte(tl.GetTool().GetInputSchema()), &schema); err != nil || schema["type"] != "object" {
				t.Errorf("%s: input schema %q", want, tl.GetTool().GetInputSchema())
			}
			if tl.GetKind() != routerv1.EntryKind_ENTRY_KIND_TOOL || tl.GetSource().GetKind() != routerv1.SourceKind_SOURCE_KIND_MCP_SERVER {
				t.Errorf("%s: kind %s, source %v", want, tl.GetKind(), tl.GetSource())
			}
		}
		for _, gone := range []string{"everything.get-env", "everything.trigger-sampling-request", "fs.read_media_file", "fs.write_file", "web.get-tiny-image"} {
			if _, ok := tools[gone]; ok {
				t.Errorf("%s is listed despite the allow/deny lists", gone)
			}
		}
		skills, err := c.ListSkills(ctx(t), &routerv1.ListSkillsRequest{Kinds: routerv1.KindFilter_KIND_FILTER_SKILLS})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range skills.GetSkills() {
			if s.GetKind() == routerv1.EntryKind_ENTRY_KIND_TOOL {
				t.Errorf("kinds=skills listed tool %s", s.GetName())
			}
		}
	})

	t.Run("match", func(t *testing.T) {
		// Each task names the tools that answer it; the filesystem server
		// keeps read_file as a deprecated alias of read_text_file.
		for task, want := range map[string][]string{
			"add two numbers and give me their sum":      {"get-sum"},
			"read the contents of a text file from disk": {"fs.read_text_file", "fs.read_file"},
			"list the files in a directory":              {"fs.list_directory"},
		} {
			res, err := c.Match(ctx(t), &routerv1.MatchRequest{Task: task, TopK: 5,
				Options: &routerv1.MatchOptions{Kinds: routerv1.KindFilter_KIND_FILTER_TOOLS}})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, cand := range res.GetCandidates() {
				names = append(names, cand.GetSkill().GetName())
				if cand.GetSkill().GetTool().GetInputSchema() == "" {
					t.Errorf("%s has no input schema in Match", cand.GetSkill().GetName())
				}
			}
			if len(names) == 0 || !slices.ContainsFunc(want, func(w string) bool { return strings.HasSuffix(names[0], w) }) {
				t.Errorf("%q: %v, want one of %v first", task, names, want)
			}
		}
		res, err := c.Match(ctx(t), &routerv1.MatchRequest{Task: "fill in a PDF form",
			Options: &routerv1.MatchOptions{Kinds: routerv1.KindFilter_KIND_FILTER_SKILLS}})
		if err != nil || len(res.GetCandidates()) == 0 || res.GetCandidates()[0].GetSkill().GetName() != "pdf-form-filling" {
			t.Errorf("skills still match: %v %v", res, err)
		}
	})

	t.Run("refresh on change", func(t *testing.T) {
		// The everything server registers its tools that depend on the
		// client's capabilities after initialize, and says so.
		tools := toolList(t, c)
		if _, ok := tools["everything.simulate-research-query"]; !ok {
			t.Error("the tool registered after initialize is missing")
		}
		ev := serverByName(t, c, "everything")
		for deadline := time.Now().Add(10 * time.Second); ev.GetRefreshes() < 1 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond) // a listing follows a notification within a second
			ev = serverByName(t, c, "everything")
		}
		if ev.GetListChanged() < 1 || ev.GetRefreshes() < 1 {
			t.Errorf("everything: %d list_changed, %d refreshes", ev.GetListChanged(), ev.GetRefreshes())
		}
		before := ev.GetResources()
		// A gzip of a data URI becomes a session resource: resources/list_changed.
		res, err := c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "everything.gzip-file-as-resource",
			Arguments: `{"name":"hello.gz","data":"data:text/plain;base64,aGVsbG8=","outputType":"resourceLink"}`})
		if err != nil || res.GetIsError() {
			t.Fatalf("gzip: %v %v", res, err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for serverByName(t, c, "everything").GetResources() <= before {
			if time.Now().After(deadline) {
				t.Fatalf("resources stayed at %d", before)
			}
			time.Sleep(100 * time.Millisecond)
		}
	})

	t.Run("call_tool", func(t *testing.T) {
		res, err := c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "everything.echo", Arguments: `{"message":"hi there"}`})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.GetContent()) == 0 || !strings.Contains(res.GetContent()[0].GetText(), "hi there") ||
			!strings.HasPrefix(res.GetContent()[0].GetText(), `<tool_result name="everything.echo" server="everything" trust="trusted">`) ||
			res.GetIsError() || res.GetDecisionId() == "" {
			t.Errorf("echo: %+v", res)
		}
		res, err = c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "web.get-sum", Arguments: `{"a":1,"b":2}`})
		if status.Code(err) != codes.PermissionDenied || reasonOf(err) != "TOOL_NOT_ALLOWLISTED" {
			t.Errorf("a tool the allowlist does not name: %v %v", res, err)
		}
		res, err = c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "web.echo", Arguments: `{"message":"over http"}`})
		if err != nil || !strings.Contains(res.GetContent()[0].GetText(), "over http") {
			t.Errorf("web.echo: %v %v", res, err)
		}
		res, err = c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "everything.get-sum", Arguments: `{"a":"not a number"}`})
		if err != nil || !res.GetIsError() {
			t.Errorf("invalid arguments: %+v %v; want an isError result", res, err)
		}
		if _, err := c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "everything.echo", Arguments: `[1,2]`}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("arguments that are not an object: %v", err)
		}
		if _, err := c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "pdf-form-filling"}); status.Code(err) != codes.FailedPrecondition {
			t.Errorf("a skill's name: %v", err)
		}
	})

	t.Run("untrusted server needs a pin", func(t *testing.T) {
		call := &routerv1.CallToolRequest{Name: "fs.read_text_file", Arguments: fmt.Sprintf(`{"path":%q}`, filepath.Join(root, "notes.txt"))}
		must(t, os.WriteFile(allow, []byte("tool:everything.*\ntool:web.echo\ntool:fs.read_text_file\n"), 0o644))
		_, err := c.CallTool(ctx(t), call)
		if status.Code(err) != codes.PermissionDenied || !strings.Contains(err.Error(), "must pin") {
			t.Fatalf("unpinned untrusted tool: %v", err)
		}
		sha := toolList(t, c)["fs.read_text_file"].GetTool().GetDefinitionSha256()
		must(t, os.WriteFile(allow, []byte("tool:fs.read_text_file sha256:"+strings.Repeat("0", 64)+"\n"), 0o644))
		time.Sleep(1100 * time.Millisecond) // the allowlist is re-read when its stamp changes
		if _, err := c.CallTool(ctx(t), call); reasonOf(err) != "TOOL_CHANGED" {
			t.Errorf("a wrong pin: %v", err)
		}
		must(t, os.WriteFile(allow, []byte("tool:fs.read_text_file sha256:"+sha+"\n"), 0o644))
		time.Sleep(1100 * time.Millisecond)
		res, err := c.CallTool(ctx(t), call)
		if err != nil || !strings.Contains(res.GetContent()[0].GetText(), "the launch code is 1234") ||
			!strings.Contains(res.GetContent()[0].GetText(), `trust="untrusted"`) {
			t.Errorf("pinned: %+v %v", res, err)
		}
		res, err = c.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "fs.read_text_file", Arguments: `{"path":"/etc/passwd"}`})
		if err != nil || !res.GetIsError() {
			t.Errorf("a path outside the root: %+v %v; want the server's isError", res, err)
		}
	})

	t.Run("MCP front", func(t *testing.T) {
		must(t, os.WriteFile(allow, []byte("tool:everything.*\n"), 0o644))
		time.Sleep(1100 * time.Millisecond)
		mc := connectMCP(t, &mcpsdk.StreamableClientTransport{Endpoint: "http://" + r.Main.MCPAddr() + "/mcp"})
		var found struct {
			Tools []struct {
				Name        string
				Description string
				InputSchema map[string]any `json:"inputSchema"`
				Server      string
				Trust       string
			}
		}
		mc.call("find_tools", map[string]any{"task": "echo a message back to me", "top_k": 3}, &found)
		if len(found.Tools) == 0 || found.Tools[0].Name != "everything__echo" || found.Tools[0].InputSchema["type"] != "object" ||
			found.Tools[0].Description == "" {
			t.Fatalf("find_tools: %+v", found)
		}
		// By the name find_tools gave, as a host that registered it calls.
		res := mc.call("call_tool", map[string]any{"name": found.Tools[0].Name, "arguments": map[string]any{"message": "via mcp"}}, nil)
		if res.IsError || !strings.Contains(text(res), "via mcp") || !strings.Contains(text(res), "<tool_result") {
			t.Errorf("call_tool: %+v %q", res, text(res))
		}
		res = mc.call("call_tool", map[string]any{"name": "fs.read_text_file", "arguments": map[string]any{"path": "x"}}, nil)
		if !res.IsError || !strings.Contains(text(res), "TOOL_NOT_ALLOWLISTED") {
			t.Errorf("call_tool refused: %q", text(res))
		}
		var skills struct{ Candidates []struct{ Name string } }
		mc.call("find_skills", map[string]any{"task": "echo a message back to me"}, &skills)
		for _, cand := range skills.Candidates {
			if strings.Contains(cand.Name, ".") {
				t.Errorf("find_skills proposed tool %s", cand.Name)
			}
		}
	})
}

// TestToolsHotReloadAndRestart: the flag and the server list reload without a
// restart; a restart with unchanged servers embeds nothing again.
func TestToolsHotReloadAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Node MCP servers")
	}
	node, everything, _ := npmServers(t)
	ws := daemontest.CopyExamples(t)
	state := t.TempDir()
	conf := func(toolsCall bool, servers string) {
		must(t, os.MkdirAll(filepath.Join(ws, ".mcp"), 0o755))
		must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(fmt.Sprintf(
			"flags: {tools_call: %v}\nmcp_servers:\n%s", toolsCall, servers)), 0o644))
	}
	server := func(name string) string {
		return fmt.Sprintf("  %s: {command: %q, args: [%q, stdio], trust: trusted}\n", name, node, everything)
	}
	must(t, os.WriteFile(filepath.Join(ws, "skills", "ALLOWLIST.txt"), []byte("tool:one.*\n"), 0o644))
	conf(true, server("one"))
	r := daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	if st := waitServers(t, r.Client, "one"); st.GetLastReindex().GetEmbedded() == 0 {
		t.Fatal("the first start embedded nothing: the restart check below would prove nothing")
	}
	if _, err := r.Client.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "one.echo", Arguments: `{"message":"x"}`}); err != nil {
		t.Fatal(err)
	}

	conf(false, server("one")+server("two"))
	waitServers(t, r.Client, "one", "two")
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := r.Client.CallTool(ctx(t), &routerv1.CallToolRequest{Name: "one.echo", Arguments: `{"message":"x"}`})
		if reasonOf(err) == "TOOLS_CALL_DISABLED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools_call off: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, ok := toolList(t, r.Client)["two.echo"]; ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server added by a reload has no tools listed")
		}
	}
	r.Stop(t)

	r = daemontest.Start(t, ws, daemontest.Options{StateDir: state})
	st := waitServers(t, r.Client, "one", "two")
	if n := len(toolList(t, r.Client)); n < 20 {
		t.Fatalf("%d tools after the restart", n)
	}
	if st.GetLastReindex().GetEmbedded() != 0 {
		t.Errorf("the restart embedded %d texts; unchanged servers should embed none", st.GetLastReindex().GetEmbedded())
	}
}

func serverByName(t *testing.T, c routerv1.SkillRouterClient, name string) *routerv1.ServerStatus {
	t.Helper()
	st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.GetServers() {
		if s.GetName() == name {
			return s
		}
	}
	t.Fatalf("no server %s", name)
	return nil
}
