package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/upstream/upstreamtest"
)

func TestMain(m *testing.M) {
	upstreamtest.Main() // serves a scripted server when the test binary runs as one
	os.Exit(m.Run())
}

// rawServer configures a scripted server started from this test binary.
func rawServer(t *testing.T, name string, spec *upstreamtest.Raw) ServerConfig {
	t.Helper()
	path, err := upstreamtest.WriteSpec(t.TempDir(), spec)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Command: exe, Env: map[string]Value{upstreamtest.EnvSpec: {Literal: path}},
		StartupTimeout: patience(t), CallTimeout: patience(t)}
}

// patience is how long a test waits for what load only slows down (a
// server starting, a listing of 10,000 tools, a call): until shortly before
// the test's deadline (go test -timeout), so that a loaded machine or the
// race detector makes a test slow, never wrong. The timeouts a test is
// about are set where it checks them, far from what it waits for.
func patience(t *testing.T) time.Duration {
	if d, ok := t.Deadline(); ok {
		return max(time.Until(d)*9/10, time.Second)
	}
	return 10 * time.Minute
}

func newManager(t *testing.T, getenv func(string) string) *Manager {
	t.Helper()
	if getenv == nil {
		getenv = os.Getenv
	}
	m := New(Options{MinBackoff: 50 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, RefreshInterval: 100 * time.Millisecond,
		TerminateGrace: 500 * time.Millisecond, Getenv: getenv, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(func() { m.Close() })
	return m
}

// waitFor polls cond until it holds, or until the test's patience runs
// out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience(t))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func serverStatus(m *Manager, name string) skill.ServerStatus {
	for _, s := range m.Servers() {
		if s.Name == name {
			return s
		}
	}
	return skill.ServerStatus{}
}

func toolNames(m *Manager) string {
	tools, _ := m.Tools()
	var out []string
	for _, e := range tools {
		out = append(out, e.Name)
	}
	return strings.Join(out, ",")
}

func tool(name, desc string) map[string]any {
	return map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}}
}

// TestBadServersLeaveOthersServing: every kind of broken server ends in
// state failed with a specific reason, and the good server's tools keep
// being served throughout.
func TestBadServersLeaveOthersServing(t *testing.T) {
	m := newManager(t, nil)
	good := rawServer(t, "good", &upstreamtest.Raw{Tools: rawTools(t, tool("echo", "Echo text back"))})
	exits := rawServer(t, "exits", &upstreamtest.Raw{ExitOnInitialize: true})
	hangs := rawServer(t, "hangs", &upstreamtest.Raw{HangOnInitialize: true})
	hangs.StartupTimeout = 300 * time.Millisecond
	garbage := rawServer(t, "garbage", &upstreamtest.Raw{GarbageOnInitialize: true})
	garbage.StartupTimeout = time.Second
	badList := rawServer(t, "badlist", &upstreamtest.Raw{GarbageOnList: true})
	badList.StartupTimeout = time.Second
	missing := ServerConfig{Name: "missing", Command: "/nonexistent/mcp-server-secret-path", Args: []string{"--token=hunter2"}}
	m.Apply([]ServerConfig{good, exits, hangs, garbage, badList, missing})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"exits":   "the server process exited during initialize (exit status 3)",
		"hangs":   "no answer within startup_timeout 300ms",
		"garbage": "initialize",
		"badlist": "tools/list",
		"missing": "start the server process",
	}
	// Failed servers are retried, so their state alternates between failed
	// and starting; the last error stays until an attempt succeeds.
	for name, msg := range want {
		waitFor(t, name+"'s error", func() bool { return strings.Contains(serverStatus(m, name).LastError, msg) })
		st := serverStatus(m, name)
		if st.State == skill.ServerReady || st.Tools != 0 {
			t.Errorf("%s: state %s with %d tools", name, st.State, st.Tools)
		}
		if strings.Contains(st.LastError, "secret-path") || strings.Contains(st.LastError, "hunter2") {
			t.Errorf("%s: last error shows the command: %q", name, st.LastError)
		}
	}
	if got := toolNames(m); got != "good.echo" {
		t.Errorf("tools %q; want good.echo alone", got)
	}
	waitFor(t, "a retry of exits", func() bool { return !serverStatus(m, "exits").NextAttempt.IsZero() })
	if tail := strings.Join(serverStatus(m, "exits").StderrTail, "\n"); !strings.Contains(tail, "exiting during initialize") {
		t.Errorf("stderr tail of exits: %q", tail)
	}
	waitFor(t, "retries", func() bool { return serverStatus(m, "exits").Restarts >= 2 })
	if toolNames(m) != "good.echo" {
		t.Error("the good server's tools went away while others were retried")
	}
}

// TestListChanged: a change of the tool list reaches the snapshot through
// list_changed; a flood of notifications costs at most one listing per
// RefreshInterval (100 ms here) while it lasts, and one after.
func TestListChanged(t *testing.T) {
	const flood = 2000
	m := newManager(t, nil)
	file := filepath.Join(t.TempDir(), "tools.json")
	write := func(tools ...any) {
		b, _ := json.Marshal(tools)
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(tool("a", "first"))
	started := time.Now()
	m.Apply([]ServerConfig{
		rawServer(t, "live", &upstreamtest.Raw{ToolsFile: file}),
		rawServer(t, "flood", &upstreamtest.Raw{Flood: flood, Tools: rawTools(t, tool("x", "flooded"))}),
	})
	waitFor(t, "first list", func() bool { return strings.Contains(toolNames(m), "live.a") })
	_, d1 := m.Tools()
	drain(m.Changes())
	write(tool("a", "first"), tool("b", "second"))
	select {
	case <-m.Changes():
	case <-time.After(10 * time.Second):
		t.Fatal("no change signalled")
	}
	waitFor(t, "refreshed list", func() bool { return strings.Contains(toolNames(m), "live.b") })
	if _, d2 := m.Tools(); d2 == d1 {
		t.Error("digest unchanged after the list changed")
	}
	if st := serverStatus(m, "live"); st.ListChanged < 1 || st.Refreshes < 1 {
		t.Errorf("live: %d list_changed, %d refreshes", st.ListChanged, st.Refreshes)
	}
	waitFor(t, "flood received", func() bool { return serverStatus(m, "flood").ListChanged == flood })
	lasted := time.Since(started)
	time.Sleep(300 * time.Millisecond)
	// The bound follows how long the flood lasted, which a loaded machine
	// (or the race detector) stretches: a listing per notification would
	// be far above it.
	st := serverStatus(m, "flood")
	if most := int(lasted/(100*time.Millisecond)) + 2; st.State != skill.ServerReady || st.Refreshes < 1 || st.Refreshes > most {
		t.Errorf("flood: state %s, %d refreshes for %d notifications over %s; want ready and 1 to %d", st.State, st.Refreshes, flood, lasted.Round(time.Millisecond), most)
	}
}

// TestChangeBeforeSubscriptionRegistered: on a protocol that notifies only
// subscribed sessions, a tool added after the first listing but before the
// server has registered the session's subscription is still seen: the
// tools are listed again once the server acknowledges the subscription.
func TestChangeBeforeSubscriptionRegistered(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, nil)
	m.Apply([]ServerConfig{{Name: "late", Command: exe, Env: map[string]Value{upstreamtest.EnvLateListen: {Literal: "300ms"}},
		StartupTimeout: 5 * time.Second}})
	waitFor(t, "the tool added before the subscription", func() bool { return toolNames(m) == "late.a,late.b" })
	if st := serverStatus(m, "late"); st.ProtocolVersion < "2026-07-28" {
		t.Errorf("protocol %q: the server should notify subscribed sessions only", st.ProtocolVersion)
	}
}

// TestHTTPListChanged: over Streamable HTTP on a protocol before
// 2026-07-28, list_changed travels on the session's standalone SSE stream:
// the client opens it, sends the negotiated protocol version with every
// request, and sees a tool added later; a tool added while the stream is
// broken, whose notification the server drops, is seen once the stream is
// open again.
func TestHTTPListChanged(t *testing.T) {
	sdk := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "mcpsag-http-changes", Version: "1.0"}, nil)
	add := func(name string) { upstreamtest.AddTool(sdk, name) }
	add("a")
	h := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return sdk }, nil)
	var (
		mu          sync.Mutex
		gets        int
		versions    = map[string]string{} // JSON-RPC method -> Mcp-Protocol-Version of its last POST
		breakStream = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := false
		switch r.Method {
		case http.MethodGet:
			gets++
			first = gets == 1
		case http.MethodPost:
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct{ Method string }
			_ = json.Unmarshal(body, &msg)
			versions[msg.Method] = r.Header.Get("Mcp-Protocol-Version")
		}
		mu.Unlock()
		if !first {
			h.ServeHTTP(w, r)
			return
		}
		// The first stream breaks when the test says so, and "c" is added
		// before the client can open it again.
		ctx, cancel := context.WithCancel(r.Context())
		go func() {
			select {
			case <-breakStream:
			case <-ctx.Done():
			}
			cancel()
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
		add("c")
	}))
	defer srv.Close()
	m := newManager(t, nil)
	defer m.Close()
	m.Apply([]ServerConfig{{Name: "web", URL: srv.URL, StartupTimeout: 5 * time.Second}})
	waitFor(t, "ready", func() bool { return toolNames(m) == "web.a" })
	add("b")
	waitFor(t, "the tool added while the stream is open", func() bool { return toolNames(m) == "web.a,web.b" })
	st := serverStatus(m, "web")
	if st.ProtocolVersion >= "2026-07-28" || st.ListChanged < 1 {
		t.Errorf("protocol %q, %d list_changed: want an older protocol, whose notifications travel on the standalone stream", st.ProtocolVersion, st.ListChanged)
	}
	mu.Lock()
	for _, method := range []string{"notifications/initialized", "tools/list"} {
		if v, ok := versions[method]; !ok || v != st.ProtocolVersion {
			t.Errorf("%s: Mcp-Protocol-Version %q (sent: %v), want %q", method, v, ok, st.ProtocolVersion)
		}
	}
	mu.Unlock()

	close(breakStream)
	waitFor(t, "the tool added while the stream was broken", func() bool { return toolNames(m) == "web.a,web.b,web.c" })
	mu.Lock()
	defer mu.Unlock()
	if gets < 2 {
		t.Errorf("%d GET requests: the stream should have been opened again", gets)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func TestManyToolsAndPaging(t *testing.T) {
	m := newManager(t, nil)
	capped := rawServer(t, "capped", &upstreamtest.Raw{Generate: 10000, PageSize: 1000})
	all := rawServer(t, "all", &upstreamtest.Raw{Generate: 10000, PageSize: 1000})
	all.MaxTools = 10000
	loop := rawServer(t, "loop", &upstreamtest.Raw{Generate: 10, PageSize: 3, RepeatCursor: true})
	m.Apply([]ServerConfig{capped, all, loop})
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st := serverStatus(m, "capped")
	if st.Tools != DefaultMaxTools || !strings.Contains(strings.Join(st.Diagnostics, "\n"), "more than 2000 tools (max_tools)") {
		t.Errorf("capped: %d tools, diagnostics %q", st.Tools, st.Diagnostics)
	}
	if st := serverStatus(m, "all"); st.Tools != 10000 || st.State != skill.ServerReady {
		t.Errorf("all: %d tools, %s", st.Tools, st.State)
	}
	if st := serverStatus(m, "loop"); st.Tools != 3 || !strings.Contains(strings.Join(st.Diagnostics, "\n"), "repeated a page cursor") {
		t.Errorf("loop: %d tools, %q", st.Tools, st.Diagnostics)
	}
}

func TestHugeDescriptions(t *testing.T) {
	m := newManager(t, nil)
	m.Apply([]ServerConfig{rawServer(t, "huge", &upstreamtest.Raw{Generate: 8, DescriptionBytes: 1 << 20})})
	waitFor(t, "ready", func() bool { return serverStatus(m, "huge").State == skill.ServerReady })
	tools, _ := m.Tools()
	if len(tools) != 8 {
		t.Fatalf("%d tools", len(tools))
	}
	for _, e := range tools {
		if n := len([]rune(e.Description())); n > MaxDescriptionChars+1 {
			t.Errorf("%s keeps %d characters", e.Name, n)
		}
	}
	if d := strings.Join(serverStatus(m, "huge").Diagnostics, "\n"); !strings.Contains(d, "its description is 1048576 characters; cut to 2048") {
		t.Errorf("diagnostics %q", d)
	}
}

// TestCall: results come back bounded, isError passes through, slow calls
// time out, and rate limits refuse.
func TestCall(t *testing.T) {
	m := newManager(t, nil)
	cfg := rawServer(t, "srv", &upstreamtest.Raw{Tools: rawTools(t, tool("echo", "e"), tool("fail", "f"), tool("big", "b"))})
	cfg.MaxResultBytes = 4096
	cfg.Rate, cfg.Burst = 0.01, 3
	slow := rawServer(t, "slow", &upstreamtest.Raw{Tools: rawTools(t, tool("echo", "e")), CallDelay: 2 * time.Second})
	slow.CallTimeout = 200 * time.Millisecond
	m.Apply([]ServerConfig{cfg, slow})
	waitFor(t, "ready", func() bool {
		return serverStatus(m, "srv").State == skill.ServerReady && serverStatus(m, "slow").State == skill.ServerReady
	})
	ctx := context.Background()
	tl := &skill.Tool{Server: "srv", Name: "echo"}
	res, err := m.Call(ctx, tl, json.RawMessage(`{"text":"hi"}`))
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].Text != `called echo with {"text":"hi"}` {
		t.Fatalf("echo: %+v, %v", res, err)
	}
	res, err = m.Call(ctx, &skill.Tool{Server: "srv", Name: "fail"}, nil)
	if err != nil || !res.IsError {
		t.Errorf("fail: %+v, %v", res, err)
	}
	res, err = m.Call(ctx, &skill.Tool{Server: "srv", Name: "big"}, nil)
	switch {
	case err != nil:
		t.Errorf("big: %v", err)
	case !res.Truncated || res.Bytes > 4096 || len(res.Content) == 0 || !strings.Contains(res.Content[0].Text, "over the 4096-byte limit"):
		t.Errorf("big: truncated %v, %d bytes, content %+v", res.Truncated, res.Bytes, res.Content)
	}
	_, err = m.Call(ctx, tl, nil)
	if code, reason := skillError(err); code != skill.CodeResourceExhausted || reason != skill.ReasonServerRateLimited {
		t.Errorf("over the rate: %v", err)
	}
	_, err = m.Call(ctx, &skill.Tool{Server: "slow", Name: "echo"}, nil)
	if code, reason := skillError(err); code != skill.CodeUnavailable || reason != skill.ReasonUpstreamTimeout {
		t.Errorf("slow: %v", err)
	}
	_, err = m.Call(ctx, &skill.Tool{Server: "nope", Name: "echo"}, nil)
	if code, _ := skillError(err); code != skill.CodeNotFound {
		t.Errorf("unknown server: %v", err)
	}
}

func skillError(err error) (skill.Code, string) {
	var e *skill.Error
	if errors.As(err, &e) {
		return e.Code, e.Reason
	}
	return skill.ErrorCode(err), ""
}

// TestSecretsStayHidden: secrets reach the server but never Status, and a
// server never sees the router's other environment variables.
func TestSecretsStayHidden(t *testing.T) {
	env := map[string]string{"MY_TOKEN": "s3cr3t-value-123", "ROUTER_ONLY": "router-private", "PATH": os.Getenv("PATH")}
	m := newManager(t, func(k string) string { return env[k] })
	cfg := rawServer(t, "env", &upstreamtest.Raw{Stderr: "starting with token s3cr3t-value-123", ExitOnInitialize: true})
	cfg.Env["API_TOKEN"] = Value{FromEnv: "MY_TOKEN"}
	missing := rawServer(t, "unset", &upstreamtest.Raw{})
	missing.Env["API_TOKEN"] = Value{FromEnv: "NOT_SET"}
	m.Apply([]ServerConfig{cfg, missing})
	waitFor(t, "failed", func() bool {
		return serverStatus(m, "env").State == skill.ServerFailed && serverStatus(m, "unset").State == skill.ServerFailed
	})
	st := serverStatus(m, "env")
	all, _ := json.Marshal(m.Servers())
	if strings.Contains(string(all), "s3cr3t") || strings.Contains(string(all), os.Args[0]) {
		t.Errorf("status shows a secret or the command: %s", all)
	}
	if !strings.Contains(strings.Join(st.StderrTail, "\n"), "starting with token REDACTED") {
		t.Errorf("stderr tail %q", st.StderrTail)
	}
	if got := serverStatus(m, "unset").LastError; !strings.Contains(got, "env API_TOKEN: environment variable NOT_SET is not set") {
		t.Errorf("unset secret: %q", got)
	}
}

func TestHTTPFailures(t *testing.T) {
	slow := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/401", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer right" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		http.Error(w, "unreachable", http.StatusTeapot)
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slow:
		case <-r.Context().Done():
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("wrong\n"), 0o600)
	m := newManager(t, nil)
	defer m.Close()
	defer close(slow)
	m.Apply([]ServerConfig{
		{Name: "unauth", URL: srv.URL + "/401", BearerToken: &Value{FromFile: tokenFile}, StartupTimeout: 2 * time.Second},
		{Name: "broken", URL: srv.URL + "/500", StartupTimeout: 2 * time.Second},
		{Name: "slow", URL: srv.URL + "/slow", StartupTimeout: 300 * time.Millisecond},
	})
	waitFor(t, "all failed", func() bool {
		for _, n := range []string{"unauth", "broken", "slow"} {
			if serverStatus(m, n).State != skill.ServerFailed {
				return false
			}
		}
		return true
	})
	for name, want := range map[string]string{"unauth": "Unauthorized", "broken": "Internal Server Error", "slow": "no answer within startup_timeout"} {
		st := serverStatus(m, name)
		if !strings.Contains(st.LastError, want) {
			t.Errorf("%s: %q; want %q", name, st.LastError, want)
		}
		if strings.Contains(st.LastError, "/401") || strings.Contains(st.LastError, "/500") || strings.Contains(st.LastError, "wrong") {
			t.Errorf("%s: error shows the URL path or the token: %q", name, st.LastError)
		}
		if st.Endpoint != srv.URL {
			t.Errorf("%s: endpoint %q", name, st.Endpoint)
		}
	}
}

// TestApply: hot reload starts, restarts and stops servers; a disabled one
// is listed and runs nothing.
func TestApply(t *testing.T) {
	m := newManager(t, nil)
	a := rawServer(t, "a", &upstreamtest.Raw{Tools: rawTools(t, tool("one", "1"))})
	b := rawServer(t, "b", &upstreamtest.Raw{Tools: rawTools(t, tool("two", "2"))})
	m.Apply([]ServerConfig{a, b})
	waitFor(t, "both", func() bool { return toolNames(m) == "a.one,b.two" })
	no := false
	b.Enabled = &no
	a.DisabledTools = []string{"one"}
	m.Apply([]ServerConfig{a, b})
	waitFor(t, "filtered and disabled", func() bool {
		return toolNames(m) == "" && serverStatus(m, "a").State == skill.ServerReady
	})
	if st := serverStatus(m, "b"); st.State != skill.ServerDisabled {
		t.Errorf("b: %s", st.State)
	}
	if st := serverStatus(m, "a"); st.ToolsFiltered != 1 || st.Restarts != 0 {
		t.Errorf("a: filtered %d restarts %d", st.ToolsFiltered, st.Restarts)
	}
	m.Apply(nil)
	if len(m.Servers()) != 0 {
		t.Errorf("servers after removing all: %+v", m.Servers())
	}
}
