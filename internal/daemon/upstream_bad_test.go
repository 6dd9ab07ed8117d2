package daemon_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	routerv1 "github.com/mcpsag/router/api/proto/mcpsag/router/v1"
	"github.com/mcpsag/router/internal/daemon/daemontest"
	"github.com/mcpsag/router/internal/slowtest"
	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

// scripted returns the YAML of a server entry that runs this test binary as
// a scripted MCP server.
func scripted(t testing.TB, spec *upstreamtest.Raw, extra string) string {
	t.Helper()
	path, err := upstreamtest.WriteSpec(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(extra, "startup_timeout") {
		extra += ", startup_timeout: 5s"
	}
	return fmt.Sprintf("{command: %q, env: {%s: %q}%s}", exe, upstreamtest.EnvSpec, path, extra)
}

func rawTool(name string, schema any, desc string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": schema})
	return b
}

// TestBadMCPServers: every kind of broken server gives a clear diagnostic in
// Status, and matching of skills and of the good server's tools goes on.
func TestBadMCPServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts many MCP servers")
	}
	slowtest.Skip(t, "starts many misbehaving MCP servers and waits out their timeouts")
	slow := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/401", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "who are you", http.StatusUnauthorized) })
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slow:
		case <-r.Context().Done():
		}
	})
	web := httptest.NewServer(mux)
	defer web.Close()
	defer close(slow)

	obj := map[string]any{"type": "object", "properties": map[string]any{"repo": map[string]any{"type": "string", "description": "owner/name of the repository"}}}
	servers := map[string]string{
		"good": scripted(t, &upstreamtest.Raw{Tools: []json.RawMessage{
			rawTool("create_issue", obj, "Create an issue in a GitHub repository"),
			rawTool("merge_pull_request", obj, "Merge a pull request"),
		}}, ", trust: trusted"),
		"missing": `{command: /nonexistent/mcp-server}`,
		"exits":   scripted(t, &upstreamtest.Raw{ExitOnInitialize: true}, ""),
		"garbage": scripted(t, &upstreamtest.Raw{GarbageOnInitialize: true}, ", startup_timeout: 1s"),
		"badlist": scripted(t, &upstreamtest.Raw{GarbageOnList: true}, ", startup_timeout: 1s"),
		"many":    scripted(t, &upstreamtest.Raw{Generate: 10000, PageSize: 500}, ""),
		"huge":    scripted(t, &upstreamtest.Raw{Generate: 3, DescriptionBytes: 1 << 20}, ""),
		// The flood arrives before the answer to tools/list: give it time
		// under the race detector.
		"flood":    scripted(t, &upstreamtest.Raw{Flood: 10000, Tools: []json.RawMessage{rawTool("ping_flood", obj, "Answer pings")}}, ", startup_timeout: 60s"),
		"unauth":   fmt.Sprintf("{url: %q}", web.URL+"/401"),
		"broken":   fmt.Sprintf("{url: %q}", web.URL+"/500"),
		"sluggish": fmt.Sprintf("{url: %q, startup_timeout: 500ms}", web.URL+"/slow"),
		"malformed": scripted(t, &upstreamtest.Raw{Tools: []json.RawMessage{
			rawTool("dup", obj, "first"), rawTool("dup", obj, "second"),
			rawTool("has space", obj, "spaced"), rawTool("reаd_file", obj, "a look-alike a"),
			rawTool("arr", []int{1}, "array schema"), rawTool("str", "object", "string schema"),
			rawTool("typed", map[string]any{"type": "string"}, "string typed schema"),
			json.RawMessage(`{"name": 42}`),
		}}, ""),
	}
	var cfg strings.Builder
	cfg.WriteString("mcp_servers:\n")
	for name, entry := range servers {
		fmt.Fprintf(&cfg, "  %s: %s\n", name, entry)
	}
	ws := daemontest.CopyExamples(t)
	must(t, os.WriteFile(filepath.Join(ws, ".mcp", ".mcp-config.yaml"), []byte(cfg.String()), 0o644))
	started := time.Now()
	r := daemontest.Start(t, ws, daemontest.Options{})
	c := r.Client

	want := map[string]string{ // server: what its status must say
		"missing":   "start the server process",
		"exits":     "exited during initialize",
		"garbage":   "initialize",
		"badlist":   "tools/list",
		"many":      "more than 2000 tools (max_tools): the first 2000 are served",
		"huge":      "its description is 1048576 characters; cut to 2048",
		"unauth":    "Unauthorized",
		"broken":    "Internal Server Error",
		"sluggish":  "no answer within startup_timeout 500ms",
		"malformed": `"dup" is listed again`,
	}
	status := func() map[string]*routerv1.ServerStatus {
		st, err := c.Status(ctx(t), &routerv1.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*routerv1.ServerStatus{}
		for _, s := range st.GetServers() {
			out[s.GetName()] = s
		}
		return out
	}
	said := func(s *routerv1.ServerStatus) string {
		return s.GetLastError() + "\n" + strings.Join(s.GetDiagnostics(), "\n")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, pending := status(), []string{}
		for name, w := range want {
			if !strings.Contains(said(st[name]), w) {
				pending = append(pending, name)
			}
		}
		if st["flood"].GetListChanged() < 10000 {
			pending = append(pending, "flood")
		}
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, n := range pending {
				t.Errorf("%s: %s %q", n, st[n].GetState(), said(st[n]))
			}
			t.FailNow()
		}
		time.Sleep(250 * time.Millisecond)
	}
	st := status()
	for _, name := range []string{"good", "many", "huge", "flood", "malformed"} {
		if st[name].GetState() != routerv1.ServerState_SERVER_STATE_READY {
			t.Errorf("%s is %s: %s", name, st[name].GetState(), said(st[name]))
		}
	}
	// At most one listing per refresh interval (1 s) while the flood lasts,
	// and one after: a bound that follows how long the flood took, which
	// the race detector and a loaded machine stretch.
	if f, most := st["flood"], int(time.Since(started)/time.Second)+2; f.GetRefreshes() > int32(most) {
		t.Errorf("10000 list_changed cost %d listings; want at most %d", f.GetRefreshes(), most)
	}
	m := st["malformed"]
	for _, w := range []string{`"has space" has a name hosts refuse`, `"reаd_file" has a name hosts refuse`, `"arr": its input schema is a array`,
		`"str": its input schema is a string`, `"typed": its input schema's type is "string"`, "tool #8 is not a tool object"} {
		if !strings.Contains(said(m), w) {
			t.Errorf("malformed lacks %q:\n%s", w, said(m))
		}
	}
	if !strings.Contains(said(m), "does not decode as the protocol says") {
		t.Errorf("malformed: the undecodable page is not reported:\n%s", said(m))
	}
	if m.GetTools() != 3 || m.GetToolsDropped() != 5 {
		t.Errorf("malformed: %d served, %d dropped", m.GetTools(), m.GetToolsDropped())
	}

	for task, want := range map[string]string{
		"fill in a PDF form from a JSON file":     "pdf-form-filling",
		"open an issue in the github repository":  "good.create_issue",
		"merge the pull request once CI is green": "good.merge_pull_request",
	} {
		res, err := c.Match(ctx(t), &routerv1.MatchRequest{Task: task})
		if err != nil {
			t.Fatalf("%q: %v", task, err)
		}
		if len(res.GetCandidates()) == 0 || res.GetCandidates()[0].GetSkill().GetName() != want {
			t.Errorf("%q: %v, want %s first", task, res.GetCandidates(), want)
		}
	}
	// A server that became ready is served from the next generation.
	var tools map[string]*routerv1.SkillSummary
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		tools = toolList(t, c)
		missing := []string{}
		for _, name := range []string{"malformed.dup", "huge.tool-00000", "many.tool-01999", "flood.ping_flood"} {
			if _, ok := tools[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not served: %v", missing)
		}
	}
	if _, ok := tools["many.tool-02000"]; ok {
		t.Error("a tool over max_tools is served")
	}
	var lookalike bool
	for name := range tools {
		if strings.HasPrefix(name, "malformed.re_d_file_") {
			lookalike = true
		}
	}
	if !lookalike {
		t.Error("the look-alike name was not served under a rewritten name")
	}
}
