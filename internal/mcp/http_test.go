package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/auth"
	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/skill"
)

// Tokens of the HTTP tests, by id; each token's secret is "secret-" + id.
const testTokens = `tokens:
  - {id: full, sha256: %s, groups: ['*']}
  - {id: matcher, sha256: %s, groups: [match]}
  - {id: reviewer, sha256: %s, groups: [match, load], agents: [reviewer]}
  - {id: slow, sha256: %s, groups: [match, load], rate: 2, burst: 6}
  - {id: admin, sha256: %s, groups: [admin]}
`

func loadTestTokens(t *testing.T) *auth.Tokens {
	t.Helper()
	var hashes []any
	for _, id := range []string{"full", "matcher", "reviewer", "slow", "admin"} {
		hashes = append(hashes, auth.HashToken("secret-"+id))
	}
	p := filepath.Join(t.TempDir(), "tokens.yaml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(testTokens, hashes...)), 0o600); err != nil {
		t.Fatal(err)
	}
	toks, err := auth.LoadTokens(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	return toks
}

// httpHarness serves a Front over HTTP on a loopback port.
type httpHarness struct {
	*harness
	srv *httptest.Server
	// changed receives the HTTP clients' prompts/list_changed, apart from
	// the in-memory client's.
	changed chan string
}

func newHTTPHarness(t *testing.T, ho HTTPOptions, opts ...harnessOpt) *httpHarness {
	t.Helper()
	h := newHarness(t, opts...)
	srv := httptest.NewServer(h.front.HTTPHandler(ho))
	t.Cleanup(srv.Close)
	return &httpHarness{harness: h, srv: srv, changed: make(chan string, 16)}
}

// headerTransport adds headers to every request.
type headerTransport struct {
	h    http.Header
	base http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return t.base.RoundTrip(r)
}

// client connects a Go SDK client to path (with its query) using token.
func (h *httpHarness) client(path, token string, extra http.Header) (*mcpsdk.ClientSession, error) {
	hdr := http.Header{}
	for k, v := range extra {
		hdr[k] = v
	}
	if token != "" {
		hdr.Set("Authorization", "Bearer "+token)
	}
	tr := &mcpsdk.StreamableClientTransport{
		Endpoint:   h.srv.URL + path,
		HTTPClient: &http.Client{Transport: headerTransport{h: hdr, base: http.DefaultTransport}},
	}
	opts := &mcpsdk.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcpsdk.PromptListChangedRequest) { h.changed <- "prompts" },
	}
	cs, err := mcptest.Connect(context.Background(), &mcpsdk.Implementation{Name: "http-test", Version: "1"}, opts, tr)
	if err == nil {
		h.t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func (h *httpHarness) mustClient(path, token string) *mcpsdk.ClientSession {
	h.t.Helper()
	cs, err := h.client(path, token, nil)
	if err != nil {
		h.t.Fatalf("connect %s as %q: %v", path, token, err)
	}
	return cs
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one raw request to the MCP endpoint.
func (h *httpHarness) post(path, body string, hdr map[string]string) (*http.Response, string) {
	h.t.Helper()
	req, err := http.NewRequest(http.MethodPost, h.srv.URL+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func callTool(t *testing.T, cs *mcpsdk.ClientSession, name string, args any) *mcpsdk.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func toolNames(t *testing.T, cs *mcpsdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	slices.Sort(out)
	return out
}

func TestHTTPWithoutTokens(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	// A client cannot choose the peer address the router records.
	cs, err := h.client(Path, "", http.Header{peerHeader: {"6.6.6.6:1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, cs); !slices.Equal(got, []string{toolFind, toolList, toolLoad, toolRead}) {
		t.Errorf("tools = %v", got)
	}
	res := callTool(t, cs, toolFind, map[string]any{"task": "fill a PDF form"})
	checkStructured(t, res)
	if res.IsError || !strings.Contains(text(res), "pdf-form-filling") {
		t.Fatalf("find_skills = %s", text(res))
	}
	rr, err := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/SKILL.md"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "PDF forms") {
		t.Fatalf("read = %v, %v", rr, err)
	}
	h.cat.mu.Lock()
	last := h.cat.origins[len(h.cat.origins)-1]
	h.cat.mu.Unlock()
	if last.Transport != "mcp" || !strings.HasPrefix(last.Peer, "127.0.0.1:") || last.Principal != "" {
		t.Errorf("origin = %+v, want mcp from the real loopback peer, anonymous", last)
	}
	// The Go SDK's client speaks 2026-07-28, which has no sessions; a
	// client of an earlier revision gets one.
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %s", v)
	}
	recs := h.audit.find("tools/call", toolFind)
	if len(recs) == 0 || !strings.HasPrefix(recs[0].Peer, "127.0.0.1:") || recs[0].SessionID != "" {
		t.Errorf("audit = %+v", recs)
	}
	if resp, _ := h.post(Path, initializeBody, nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize on 2025-11-25: %d, session %q", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"))
	}
	if resp, _ := h.post(MetadataPath, "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("metadata served without tokens: %d", resp.StatusCode)
	}
}

func TestHTTPOrigin(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{AllowedOrigins: []string{"https://app.example.com"}})
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"https://app.example.com", http.StatusOK},
		{"https://evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"https://app.example.com.evil.example", http.StatusForbidden},
		{"http://app.example.com", http.StatusForbidden},
	} {
		hdr := map[string]string{}
		if tc.origin != "" {
			hdr["Origin"] = tc.origin
		}
		resp, body := h.post(Path, initializeBody, hdr)
		if resp.StatusCode != tc.want {
			t.Errorf("Origin %q: %d %s, want %d", tc.origin, resp.StatusCode, body, tc.want)
		}
		if tc.want == http.StatusForbidden && !strings.Contains(body, "is not allowed") {
			t.Errorf("Origin %q: body %q does not say why", tc.origin, body)
		}
		if tc.origin == "https://app.example.com" && resp.Header.Get("Access-Control-Allow-Origin") != tc.origin {
			t.Errorf("allowed origin without CORS header: %v", resp.Header)
		}
	}
	req, _ := http.NewRequest(http.MethodOptions, h.srv.URL+Path, nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if n := len(h.audit.find("http", "")); n != 4 {
		t.Errorf("%d refused requests audited, want 4", n)
	}
}

func TestHTTPLoopbackHost(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	resp, body := h.post(Path, initializeBody, map[string]string{"Host": "evil.example:80"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Host") {
		t.Errorf("rebinding Host: %d %q, want 403 naming the Host", resp.StatusCode, body)
	}
	resp, _ = h.post(Path, initializeBody, map[string]string{"Host": "localhost"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("Host localhost: %d", resp.StatusCode)
	}
}

func TestHTTPTokens(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	wantMeta := h.srv.URL + MetadataPath + Path
	for _, tc := range []struct{ name, auth, reason string }{
		{"missing", "", "no_token"},
		{"wrong", "Bearer secret-nobody", "bad_token"},
		{"hash instead of token", "Bearer " + auth.HashToken("secret-full"), "bad_token"},
		{"basic", "Basic c2VjcmV0LWZ1bGw=", "no_token"},
		{"empty bearer", "Bearer ", "no_token"},
	} {
		hdr := map[string]string{}
		if tc.auth != "" {
			hdr["Authorization"] = tc.auth
		}
		resp, body := h.post(Path, initializeBody, hdr)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d %q, want 401", tc.name, resp.StatusCode, body)
		}
		if got := resp.Header.Get("WWW-Authenticate"); got != `Bearer resource_metadata="`+wantMeta+`"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, got)
		}
		recs := h.audit.find("http", "")
		if len(recs) == 0 || recs[len(recs)-1].Reason != tc.reason || recs[len(recs)-1].Decision != skill.DecisionDeny {
			t.Errorf("%s: audit %+v, want reason %s", tc.name, recs, tc.reason)
		}
	}

	for _, p := range []string{MetadataPath, MetadataPath + Path} {
		resp, err := http.Get(h.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if meta["resource"] != h.srv.URL+Path || !strings.Contains(fmt.Sprint(meta["scopes_supported"]), "load") {
			t.Errorf("%s: metadata %v", p, meta)
		}
	}

	resp, body := h.post(Path, initializeBody, map[string]string{"Authorization": "Bearer secret-admin"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "none of the groups") {
		t.Errorf("admin-only token: %d %q", resp.StatusCode, body)
	}

	cs := h.mustClient(Path, "secret-full")
	res := callTool(t, cs, toolFind, map[string]any{"task": "fill a PDF form"})
	if res.IsError {
		t.Fatal(text(res))
	}
	h.cat.mu.Lock()
	last := h.cat.origins[len(h.cat.origins)-1]
	h.cat.mu.Unlock()
	if last.Principal != "full" {
		t.Errorf("origin principal %q, want the token id", last.Principal)
	}
}

func TestHTTPTokenGroups(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	cs := h.mustClient(Path, "secret-matcher")
	if got := toolNames(t, cs); !slices.Equal(got, []string{toolFind, toolList}) {
		t.Errorf("match-only token sees tools %v", got)
	}
	if res := callTool(t, cs, toolFind, map[string]any{"task": "pdf forms"}); res.IsError {
		t.Errorf("find_skills: %s", text(res))
	}
	res := callTool(t, cs, toolLoad, map[string]any{"name": "pdf-form-filling"})
	if !res.IsError || !strings.HasPrefix(text(res), "permission_denied: token matcher may not call load_skill (it needs group load") {
		t.Errorf("load_skill without group load: %s", text(res))
	}
	_, err := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/SKILL.md"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != codeForbidden {
		t.Errorf("resources/read without group load: %v", err)
	}
	recs := h.audit.find("tools/call", toolLoad)
	if len(recs) != 1 || recs[0].Decision != skill.DecisionDeny || recs[0].Reason != "scope" || recs[0].Principal != "matcher" {
		t.Errorf("audit = %+v", recs)
	}
}

func TestHTTPAgentScope(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	resp, body := h.post(Path, initializeBody, map[string]string{"Authorization": "Bearer secret-reviewer"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "?agent=NAME") {
		t.Errorf("agent-bound token on the global view: %d %q", resp.StatusCode, body)
	}
	resp, body = h.post(Path+"?agent=coder", initializeBody, map[string]string{"Authorization": "Bearer secret-reviewer"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "may not act for agent coder") {
		t.Errorf("token for another agent: %d %q", resp.StatusCode, body)
	}
	resp, body = h.post(Path+"?agent=../x", initializeBody, map[string]string{"Authorization": "Bearer secret-full"})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "not a valid agent name") {
		t.Errorf("malformed agent: %d %q", resp.StatusCode, body)
	}

	cs := h.mustClient(Path+"?agent=reviewer", "secret-reviewer")
	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(prompts.Prompts, func(p *mcpsdk.Prompt) bool { return p.Name == "reviewer-checklist" }) {
		t.Errorf("reviewer view prompts = %v", prompts.Prompts)
	}
	res := callTool(t, cs, toolFind, map[string]any{"task": "review pull requests"})
	if res.IsError || !strings.Contains(text(res), "reviewer-checklist") {
		t.Errorf("find_skills in the reviewer view: %s", text(res))
	}
	for _, agent := range []string{"coder", ""} {
		args := map[string]any{"task": "pdf forms", "agent": agent}
		if agent == "" {
			args = map[string]any{"task": "pdf forms"} // defaults to the view's agent: allowed
			if res := callTool(t, cs, toolFind, args); res.IsError {
				t.Errorf("default agent: %s", text(res))
			}
			continue
		}
		res := callTool(t, cs, toolFind, args)
		if !res.IsError || !strings.Contains(text(res), "may not act for agent coder") {
			t.Errorf("agent %q: %s", agent, text(res))
		}
	}
}

func TestHTTPRateLimit(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	cs := h.mustClient(Path, "secret-slow")
	var refused string
	for i := 0; i < 20 && refused == ""; i++ {
		res := callTool(t, cs, toolFind, map[string]any{"task": "pdf forms"})
		if res.IsError {
			refused = text(res)
		}
	}
	if !strings.HasPrefix(refused, "resource_exhausted: rate limit of token slow exceeded: retry in ") {
		t.Fatalf("flood over the rate limit: %q", refused)
	}
	recs := h.audit.find("tools/call", toolFind)
	if recs[len(recs)-1].Decision != skill.DecisionRateLimited {
		t.Errorf("audit %+v", recs[len(recs)-1])
	}
	// Other methods are refused as JSON-RPC errors with the delay.
	_, err := cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/SKILL.md"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != codeRateLimited || !strings.Contains(string(je.Data), "retry_after_ms") {
		t.Errorf("rate-limited read: %v %s", err, je.Data)
	}
	time.Sleep(1100 * time.Millisecond) // 2 per second refills
	if res := callTool(t, cs, toolFind, map[string]any{"task": "pdf forms"}); res.IsError {
		t.Errorf("after waiting: %s", text(res))
	}
}

func TestHTTPSessionBoundToToken(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	resp, body := h.post(Path, initializeBody, map[string]string{"Authorization": "Bearer secret-full"})
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	resp, body = h.post(Path, list, map[string]string{"Authorization": "Bearer secret-matcher", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"})
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another token on the session: %d %q", resp.StatusCode, body)
	}
}

func TestHTTPBadRequests(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	resp, body := h.post(Path, initializeBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	h.post(Path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)

	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_skills","arguments":{"task":%q}}}`, strings.Repeat("a", DefaultMaxBodyBytes))
	resp, body = h.post(Path, big, hdr)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(body, "exceeds") {
		t.Errorf("2 MiB task: %d %q", resp.StatusCode, skill.Clip(body, 200))
	}
	resp, body = h.post(Path, `{"jsonrpc":"2.0","id":3,"method":`, hdr)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("truncated JSON: %d %q", resp.StatusCode, body)
	}
	resp, body = h.post(Path, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}`, hdr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"code":-32602`) {
		t.Errorf("params not an object: %d %q", resp.StatusCode, body)
	}
	resp, body = h.post(Path, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{\"name\":\"find_skills\",\"arguments\":{\"task\":\"pdf \xff forms\"}}}", hdr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "pdf-form-filling") {
		t.Errorf("invalid UTF-8: %d %q", resp.StatusCode, skill.Clip(body, 300))
	}
	resp, body = h.post(Path, `{"jsonrpc":"2.0","id":6,"method":"tools/list"}`, map[string]string{"Mcp-Session-Id": "no-such-session"})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: %d %q", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodPut, h.srv.URL+Path, bytes.NewReader(nil))
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %v %v", r, err)
	}
}

func TestHTTPDisconnectMidCall(t *testing.T) {
	cat := newCatalog()
	fake := cat.router()
	started := make(chan struct{}, 1)
	ended := make(chan error, 1)
	match := fake.MatchFunc
	fake.MatchFunc = func(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) {
		if req.Task != "block" {
			return match(ctx, req)
		}
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}
	h := &httpHarness{harness: newHarnessOver(t, cat, fake), changed: make(chan string, 16)}
	h.srv = httptest.NewServer(h.front.HTTPHandler(HTTPOptions{}))
	t.Cleanup(h.srv.Close)
	cs := h.mustClient(Path, "")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: toolFind, Arguments: map[string]any{"task": "block"}})
		errc <- err
	}()
	<-started
	cancel()
	<-errc
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("router call ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the router call outlived the client's request")
	}
	if res := callTool(t, cs, toolFind, map[string]any{"task": "pdf forms"}); res.IsError {
		t.Errorf("after a cancelled call: %s", text(res))
	}
}

func TestHTTPTooManyViews(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{}, func(o *Options, _ *View) { o.MaxViews = 1 })
	// The harness's view is the global one, which HTTP clients without an
	// agent share.
	h.mustClient(Path, "")
	resp, body := h.post(Path+"?agent=coder", initializeBody, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "too many") {
		t.Errorf("one view too many: %d %q", resp.StatusCode, body)
	}
}

// TestHTTPBadInputAndReload runs the bad input of the in-memory tests over
// real HTTP, then a reload.
func TestHTTPBadInputAndReload(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	cs := h.mustClient(Path, "secret-full")
	ctx := context.Background()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{toolRead, map[string]any{"name": "pdf-form-filling", "path": "../../etc/passwd"}, "permission_denied: "},
		{toolRead, map[string]any{"name": "pdf-form-filling", "path": "/etc/passwd"}, "permission_denied: "},
		{toolRead, map[string]any{"name": "pdf-form-filling", "path": `..\..\x`}, "permission_denied: "},
		{toolRead, map[string]any{"name": "pdf-form-filling", "path": "a\x00b"}, "permission_denied: "},
		{toolLoad, map[string]any{"name": "no-such-skill"}, "not_found: "},
		{toolFind, map[string]any{"task": 7}, `validating "arguments"`},
		{toolFind, map[string]any{}, `validating "arguments"`},
		{toolFind, map[string]any{"task": strings.Repeat("x", 20000)}, "invalid_argument: task: "},
	} {
		res := callTool(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.HasPrefix(text(res), tc.want) {
			t.Errorf("%s(%v): %s, want isError %q", tc.tool, skill.Clip(fmt.Sprint(tc.args), 80), skill.Clip(text(res), 200), tc.want)
		}
	}
	for _, uri := range []string{"skill://pdf-form-filling/../x", "skill://pdf-form-filling/%2e%2e/%2e%2e/etc/passwd", "skill://pdf-form-filling/a%00b", "skill://nope/SKILL.md"} {
		if _, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s served", uri)
		}
	}

	h.cat.publish(func(c *catalog) {
		c.skills = append(c.skills, newSkill("csv-cleanup", "Clean CSV files"))
		c.bodies[key("csv-cleanup", "")] = "Trim cells.\n"
	})
	select {
	case <-h.changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no prompts/list_changed over HTTP")
	}
	if _, err := cs.GetPrompt(ctx, &mcpsdk.GetPromptParams{Name: "csv-cleanup"}); err != nil {
		t.Errorf("new prompt over HTTP: %v", err)
	}
}

// TestHTTPLoopbackOrigin: the server's own origin on a loopback host passes
// (a page there would be this server's, and it serves none); any other is
// refused, as DNS rebinding needs.
func TestHTTPLoopbackOrigin(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	host := strings.TrimPrefix(h.srv.URL, "http://")
	_, port, _ := strings.Cut(host, ":")
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"localhost:" + port, "http://localhost:" + port, http.StatusOK},
		{host, "http://" + host, http.StatusOK},
		{"localhost:" + port, "http://localhost:1", http.StatusForbidden},
		{"localhost:" + port, "http://127.0.0.1:" + port, http.StatusForbidden},
		{"evil.example.com:" + port, "http://evil.example.com:" + port, http.StatusForbidden},
		{"localhost:" + port, "http://localhost:" + port + "/x", http.StatusForbidden},
	} {
		resp, body := h.post(Path, initializeBody, map[string]string{"Host": tc.host, "Origin": tc.origin})
		if resp.StatusCode != tc.want {
			t.Errorf("Host %s, Origin %s: %d %q, want %d", tc.host, tc.origin, resp.StatusCode, skill.Clip(body, 100), tc.want)
		}
	}
}

// TestHTTPJSONRPCErrors: over HTTP as on stdio, an unknown method is a
// JSON-RPC -32601, and a body that is not JSON a JSON-RPC -32700.
func TestHTTPJSONRPCErrors(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	resp, _ := h.post(Path, initializeBody, nil)
	hdr := map[string]string{"Mcp-Session-Id": resp.Header.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	h.post(Path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"no/such"}`, http.StatusOK, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: \"no/such\""}}`},
		{`{"jsonrpc":"2.0","id":8,"method":`, http.StatusBadRequest, `{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error: the body is not JSON"}}`},
		// The SDK's own JSON-RPC refusals pass as they are.
		{`{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, http.StatusBadRequest,
			`{"jsonrpc":"2.0","id":9,"error":{"code":-32020,"message":"Mcp-Protocol-Version header \"2025-11-25\" does not match request io.modelcontextprotocol/protocolVersion \"2026-07-28\""}}`},
	} {
		resp, body := h.post(Path, tc.body, hdr)
		if resp.StatusCode != tc.status || strings.TrimSpace(body) != tc.want || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %s %q, want %d %s", tc.body, resp.StatusCode, resp.Header.Get("Content-Type"), body, tc.status, tc.want)
		}
	}
}

// TestSlowBodiesDoNotHoldConnections: a client that announces a body and
// sends one byte of it is let go once BodyTimeout has passed, with a token
// or without (the server reads what a refused request leaves of its body).
// A body that arrives in time is served, and calls after the deadline are
// not cut by it.
func TestSlowBodiesDoNotHoldConnections(t *testing.T) {
	const bodyTimeout = 500 * time.Millisecond
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t), BodyTimeout: bodyTimeout})
	addr := strings.TrimPrefix(h.srv.URL, "http://")
	held := func(token string) time.Duration {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req := "POST " + Path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n"
		if token != "" {
			req += "Authorization: Bearer " + token + "\r\n"
		}
		start := time.Now()
		if _, err := io.WriteString(c, req+"\r\n{"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, _ = io.Copy(io.Discard, c) // until the server closes the connection
		return time.Since(start)
	}
	for _, token := range []string{"", "secret-full"} {
		if d := held(token); d > bodyTimeout+5*time.Second {
			t.Errorf("token %q: a body that never came held the connection %v; want about %v", token, d, bodyTimeout)
		}
	}
	// A session's calls, whose bodies arrive, are served past the deadline.
	cs := h.mustClient(Path, "secret-full")
	time.Sleep(2 * bodyTimeout)
	if _, err := cs.ListPrompts(context.Background(), nil); err != nil {
		t.Errorf("a call after the body timeout: %v", err)
	}
}

// TestHTTPFailedAuthIsLimited: guessing tokens over MCP HTTP spends the
// address's budget of failures, as over gRPC: 10 new wrong tokens get 401,
// the next requests 429 with Retry-After, their tokens unchecked; a client
// repeating one wrong token is told 401 each time and spends nothing.
func TestHTTPFailedAuthIsLimited(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	post := func(token string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, h.srv.URL+Path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	for range 30 {
		if res := post("the-same-wrong-token"); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a repeated wrong token: %d, want 401 every time", res.StatusCode)
		}
	}
	for i := range auth.DefaultClientFailureBurst - 1 {
		if res := post(fmt.Sprint("guess-", i)); res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("guess %d: %d, want 401", i, res.StatusCode)
		}
	}
	res := post("guess-past-the-budget")
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("a guess past the budget: %d, Retry-After %q; want 429 with a delay", res.StatusCode, res.Header.Get("Retry-After"))
	}
	if res := post("secret-full"); res.StatusCode != http.StatusTooManyRequests {
		t.Errorf("the right token from the guessing address: %d, want 429 (refused unchecked)", res.StatusCode)
	}
}

// TestRateLimitRefusalsAreAuditedSampled: a client far past its token's
// rate gets every call refused; every refusal reaches the auditor, but only
// the first is an audit line (the rest are counted only, until a minute
// has passed), so a flood cannot flood the audit stream.
func TestRateLimitRefusalsAreAuditedSampled(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{Tokens: loadTestTokens(t)})
	cs := h.mustClient(Path, "secret-slow")
	for range 60 {
		callTool(t, cs, toolFind, map[string]any{"task": "pdf forms"})
	}
	audited, counted := 0, 0
	for _, r := range h.audit.find("tools/call", toolFind) {
		if r.Decision != skill.DecisionRateLimited {
			continue
		}
		if r.Counted {
			counted++
		} else {
			audited++
		}
	}
	if audited != 1 || counted < 40 {
		t.Errorf("rate-limited calls: %d audited, %d counted only; want 1 audited and the rest counted", audited, counted)
	}
}

// TestHTTPSessionErrors: on the endpoint with sessions, a message without
// Mcp-Session-Id that is not initialize gets HTTP 400, and one naming a
// session the server does not hold gets 404, each with a JSON-RPC -32600
// that says what to do; the refused message opens no session.
func TestHTTPSessionErrors(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	before := h.front.liveSessions()
	for _, tc := range []struct {
		name, method, body, sid string
		status                  int
		id                      string
		want                    string
	}{
		{"a call without a session", http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "",
			http.StatusBadRequest, "2", `"tools/list\" needs a session and the request has no Mcp-Session-Id header`},
		{"a notification without a session", http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "",
			http.StatusBadRequest, "", `needs a session`},
		{"a call to an unknown session", http.MethodPost, `{"jsonrpc":"2.0","id":"x","method":"tools/list"}`, "no-such-session",
			http.StatusNotFound, `"x"`, `Session not found: Mcp-Session-Id \"no-such-session\" names no live session`},
		{"initialize naming an unknown session", http.MethodPost, initializeBody, "gone",
			http.StatusNotFound, "1", `start a new session with initialize`},
		{"a stream without a session", http.MethodGet, "", "", http.StatusBadRequest, "", `GET requires an Mcp-Session-Id header`},
		{"a stream of an unknown session", http.MethodGet, "", "gone", http.StatusNotFound, "", `Session not found`},
		{"closing an unknown session", http.MethodDelete, "", "gone", http.StatusNotFound, "", `Session not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, h.srv.URL+Path, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.sid != "" {
				req.Header.Set("Mcp-Session-Id", tc.sid)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var msg struct {
				ID    json.RawMessage
				Error struct {
					Code    int64
					Message string
				}
			}
			if err := json.Unmarshal(b, &msg); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%d %s %q: not a JSON-RPC answer (%v)", resp.StatusCode, resp.Header.Get("Content-Type"), b, err)
			}
			id := string(msg.ID)
			if id == "null" {
				id = ""
			}
			if resp.StatusCode != tc.status || msg.Error.Code != -32600 || id != tc.id || !strings.Contains(string(b), tc.want) {
				t.Errorf("got %d %s, want %d, code -32600, id %q and %q", resp.StatusCode, b, tc.status, tc.id, tc.want)
			}
		})
	}
	if resp, body := h.post(Path, initializeBody, nil); resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") == "" {
		t.Errorf("initialize: %d %q", resp.StatusCode, body)
	}
	if got := h.front.liveSessions(); got != before+1 {
		t.Errorf("live sessions %d, want %d (only initialize opens one)", got, before+1)
	}
}

// TestHTTPEventStreamsResume: on protocol 2025-11-25 every event stream
// starts with a priming event that carries an id and no data (SEP-1699), and
// a client whose stream broke gets what it missed by reconnecting with
// Last-Event-ID.
func TestHTTPEventStreamsResume(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{})
	resp, _ := h.post(Path, initializeBody, nil)
	sid := resp.Header.Get("Mcp-Session-Id")
	hdr := map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
	h.post(Path, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr)
	_, body := h.post(Path, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"find_skills","arguments":{"task":"fill in a PDF form"}}}`, hdr)
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	if len(events) != 2 || !strings.HasPrefix(events[0], "event: prime\nid: ") || !strings.HasSuffix(events[0], "\ndata: ") {
		t.Fatalf("the stream does not start with a priming event:\n%s", body)
	}
	prime := strings.TrimPrefix(strings.Split(events[0], "\n")[1], "id: ")
	if !strings.Contains(events[1], `"id":2,"result"`) {
		t.Fatalf("second event %q", events[1])
	}

	// The client lost the stream after the priming event: it reconnects
	// and gets the answer again.
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+Path, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Last-Event-ID", prime)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"id":2,"result"`) {
			return
		}
	}
	t.Errorf("no answer replayed after Last-Event-ID %s (status %d, %v)", prime, r.StatusCode, sc.Err())
}
