package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/mcp/mcptest"
	"github.com/mcpsag/router/internal/skill"
	"github.com/mcpsag/router/internal/testlog"
)

// auditLog collects audit records.
type auditLog struct {
	mu   sync.Mutex
	recs []skill.MCPCall
}

func (a *auditLog) MCPCalled(_ context.Context, r skill.MCPCall) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

func (a *auditLog) records() []skill.MCPCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]skill.MCPCall(nil), a.recs...)
}

// find returns the records whose method and target match.
func (a *auditLog) find(method, target string) []skill.MCPCall {
	var out []skill.MCPCall
	for _, r := range a.records() {
		if r.Method == method && (target == "" || r.Target == target) {
			out = append(out, r)
		}
	}
	return out
}

// harness is a Front over a catalog fake, with a Go SDK client connected
// over in-memory transports.
type harness struct {
	t       testing.TB
	cat     *catalog
	fake    *fakeRouter
	front   *Front
	cs      *mcpsdk.ClientSession
	logs    *testlog.Buffer
	audit   *auditLog
	changed chan string
	updated chan string // URIs of notifications/resources/updated
}

type harnessOpt func(*Options, *View)

func newHarness(t testing.TB, opts ...harnessOpt) *harness {
	t.Helper()
	cat := newCatalog()
	return newHarnessOver(t, cat, cat.router(), opts...)
}

func newHarnessOver(t testing.TB, cat *catalog, fake *fakeRouter, opts ...harnessOpt) *harness {
	t.Helper()
	h := &harness{t: t, cat: cat, fake: fake, logs: &testlog.Buffer{}, audit: &auditLog{}, changed: make(chan string, 64),
		updated: make(chan string, 64)}
	o := Options{
		Logger:  slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Auditor: h.audit,
	}
	v := View{Features: AllFeatures}
	for _, opt := range opts {
		opt(&o, &v)
	}
	h.front = New(fake, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = h.front.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	srv, err := h.front.Server(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	h.cs = h.connect(ct)
	return h
}

// connect opens a client session whose list_changed notifications go to
// h.changed.
func (h *harness) connect(t mcpsdk.Transport) *mcpsdk.ClientSession {
	h.t.Helper()
	notify := func(kind string) { h.changed <- kind }
	opts := &mcpsdk.ClientOptions{
		ToolListChangedHandler:     func(context.Context, *mcpsdk.ToolListChangedRequest) { notify("tools") },
		PromptListChangedHandler:   func(context.Context, *mcpsdk.PromptListChangedRequest) { notify("prompts") },
		ResourceListChangedHandler: func(context.Context, *mcpsdk.ResourceListChangedRequest) { notify("resources") },
		ResourceUpdatedHandler: func(_ context.Context, r *mcpsdk.ResourceUpdatedNotificationRequest) {
			h.updated <- r.Params.URI
		},
	}
	cs, err := mcptest.Connect(context.Background(), &mcpsdk.Implementation{Name: "test-client", Version: "1"}, opts, t, extensionMethods)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { cs.Close() })
	return cs
}

// extensionMethods lets a client send the Skills extension's methods.
func extensionMethods(c *mcpsdk.Client) error {
	for _, m := range []string{methodSkillsList, methodSkillsGet, methodDirectoryRead} {
		if err := mcpsdk.AddSendingCustomMethod[*rawParams, *rawResult](c, m); err != nil {
			return err
		}
	}
	return nil
}

// rawParams are the params of the Skills extension's methods.
type rawParams struct {
	mcpsdk.ParamsBase
	URI    string `json:"uri,omitempty"`
	Cursor string `json:"cursor,omitempty"`
}

// rawResult keeps a result as JSON, decoded without this package's types.
type rawResult struct {
	mcpsdk.ResultBase
	Raw json.RawMessage
}

func (r *rawResult) UnmarshalJSON(b []byte) error {
	r.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// ext sends a Skills extension method and decodes its result into out.
func (h *harness) ext(method string, p rawParams, out any) error {
	h.t.Helper()
	res, err := mcpsdk.CallCustomMethod[*rawParams, *rawResult](context.Background(), h.cs, method, &p)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res.Raw, out); err != nil {
		h.t.Fatalf("%s: %s: %v", method, res.Raw, err)
	}
	return nil
}

func (h *harness) call(name string, args any) *mcpsdk.CallToolResult {
	h.t.Helper()
	res, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s(%v): protocol error %v", name, args, err)
	}
	return res
}

// ok calls a tool that must succeed and decodes its structured output.
func (h *harness) ok(name string, args any, out any) *mcpsdk.CallToolResult {
	h.t.Helper()
	res := h.call(name, args)
	if res.IsError {
		h.t.Fatalf("%s(%v): isError: %s", name, args, text(res))
	}
	checkStructured(h.t, res)
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		h.t.Fatalf("%s: structured content %s: %v", name, b, err)
	}
	return res
}

// toolErr calls a tool that must fail with isError and returns its text.
func (h *harness) toolErr(name string, args any) string {
	h.t.Helper()
	res := h.call(name, args)
	if !res.IsError {
		h.t.Fatalf("%s(%v): succeeded, want isError; structured %v", name, args, res.StructuredContent)
	}
	if res.StructuredContent != nil {
		h.t.Errorf("%s: error result carries structured content %v", name, res.StructuredContent)
	}
	return text(res)
}

// checkStructured asserts that the first text block holds the structured
// content as JSON (find_skills and find_tools add a sentence with their
// verdict after it).
func checkStructured(t testing.TB, res *mcpsdk.CallToolResult) {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatal("no structured content")
	}
	tc, ok := res.Content[0].(*mcpsdk.TextContent)
	if !ok {
		t.Fatalf("first content block is %T, want text", res.Content[0])
	}
	var fromText, fromStruct any
	if err := json.Unmarshal([]byte(tc.Text), &fromText); err != nil {
		t.Fatalf("text block is not JSON: %v", err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &fromStruct)
	tb, _ := json.Marshal(fromText)
	sb, _ := json.Marshal(fromStruct)
	if !bytes.Equal(tb, sb) {
		t.Errorf("text block differs from structured content:\n text %s\n struct %s", tb, sb)
	}
}

func text(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// waitChanged waits for list_changed notifications of each kind in want,
// and fails on any kind not wanted that arrives meanwhile.
func (h *harness) waitChanged(want ...string) {
	h.t.Helper()
	pending := map[string]bool{}
	for _, w := range want {
		pending[w] = true
	}
	deadline := time.After(5 * time.Second)
	for len(pending) > 0 {
		select {
		case k := <-h.changed:
			if !pending[k] && !contains(want, k) {
				h.t.Errorf("unexpected %s/list_changed", k)
			}
			delete(pending, k)
		case <-deadline:
			h.t.Fatalf("no list_changed for %v", pending)
		}
	}
}

// quiet fails if a list_changed notification arrives within d.
func (h *harness) quiet(d time.Duration) {
	h.t.Helper()
	select {
	case k := <-h.changed:
		h.t.Errorf("unexpected %s/list_changed", k)
	case <-time.After(d):
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
