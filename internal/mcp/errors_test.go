package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

func TestToolErrorContract(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		tool string
		args map[string]any
		want string // prefix of the isError text
		has  string
	}{
		{"unknown skill", toolLoad, map[string]any{"name": "no-such-skill"}, `not_found: no skill named "no-such-skill" [SKILL_NOT_FOUND]`, "list_skills"},
		{"disabled skill", toolLoad, map[string]any{"name": "legacy-ftp"}, "failed_precondition: ", "disabled"},
		{"budget out of range", toolLoad, map[string]any{"name": "pdf-form-filling", "token_budget": 999999}, "invalid_argument: token_budget: 999999 is out of range", ""},
		{"negative budget", toolLoad, map[string]any{"name": "pdf-form-filling", "token_budget": -1}, "invalid_argument: token_budget: ", ""},
		{"empty name", toolLoad, map[string]any{"name": " "}, "invalid_argument: name: required", ""},
		{"bad agent", toolFind, map[string]any{"task": "x", "agent": "../etc"}, "invalid_argument: agent: ", ""},
		{"empty task", toolFind, map[string]any{"task": "\t \n"}, "invalid_argument: task: the task is empty [TASK_EMPTY]", ""},
		{"1 MiB task", toolFind, map[string]any{"task": strings.Repeat("a", 1<<20)}, "invalid_argument: task: the task is 1048576 bytes; the limit is 16384 [TASK_TOO_LARGE]", ""},
		{"top_k out of range", toolFind, map[string]any{"task": "pdf", "top_k": 51}, "invalid_argument: top_k: ", "TOP_K_OUT_OF_RANGE"},
		{"traversal", toolRead, map[string]any{"name": "pdf-form-filling", "path": "../../etc/passwd"}, "permission_denied: ", "leaves the skill folder"},
		{"absolute", toolRead, map[string]any{"name": "pdf-form-filling", "path": "/etc/passwd"}, "permission_denied: ", ""},
		{"backslashes", toolRead, map[string]any{"name": "pdf-form-filling", "path": `references\..\..\x`}, "permission_denied: ", ""},
		{"NUL", toolRead, map[string]any{"name": "pdf-form-filling", "path": "references/field-types.md\x00.png"}, "permission_denied: ", ""},
		{"encoded dots reach the router verbatim", toolRead, map[string]any{"name": "pdf-form-filling", "path": "%2e%2e/x"}, "not_found: ", ""},
		{"wrong type", toolFind, map[string]any{"task": 5}, `validating "arguments"`, "task"},
		{"wrong type top_k", toolFind, map[string]any{"task": "pdf", "top_k": "three"}, `validating "arguments"`, "top_k"},
		{"missing required", toolRead, map[string]any{"name": "pdf-form-filling"}, `validating "arguments"`, "path"},
		{"unknown argument", toolFind, map[string]any{"task": "pdf", "level": 3}, `validating "arguments"`, "level"},
		{"fraction", toolLoad, map[string]any{"name": "pdf-form-filling", "token_budget": 1.5}, `validating "arguments"`, ""},
		{"null arguments object", toolFind, nil, `validating "arguments"`, "task"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args any = tc.args
			if tc.args == nil {
				args = json.RawMessage("null")
			}
			msg := h.toolErr(tc.tool, args)
			if !strings.HasPrefix(msg, tc.want) || !strings.Contains(msg, tc.has) {
				t.Errorf("error text %q, want prefix %q containing %q", skill.Clip(msg, 300), tc.want, tc.has)
			}
			if strings.Contains(msg, "secret-host-path") {
				t.Errorf("host path in %q", msg)
			}
		})
	}
}

func TestRouterFailures(t *testing.T) {
	cat := newCatalog()
	fake := cat.router()
	var fail error
	fake.MatchFunc = func(ctx context.Context, req skill.MatchRequest) (*skill.MatchResult, error) { return nil, fail }
	h := newHarnessOver(t, cat, fake)

	fail = skill.Errorf(skill.CodeUnavailable, "no index yet")
	if msg := h.toolErr(toolFind, map[string]any{"task": "pdf"}); msg != "unavailable: no index yet (the router is not ready; retry in a few seconds)" {
		t.Errorf("unavailable: %q", msg)
	}
	fail = &skill.Error{Code: skill.CodeFailedPrecondition, Message: "file too large", Err: errors.New("stat /srv/secret-host-path/x: too big")}
	if msg := h.toolErr(toolFind, map[string]any{"task": "pdf"}); msg != "failed_precondition: file too large" {
		t.Errorf("a wrapped cause leaked: %q", msg)
	}
	fail = fmt.Errorf("read body: %w", context.DeadlineExceeded)
	if msg := h.toolErr(toolFind, map[string]any{"task": "pdf"}); !strings.HasPrefix(msg, "deadline_exceeded: ") {
		t.Errorf("deadline: %q", msg)
	}

	idRE := regexp.MustCompile(`^internal error \(request id ([0-9a-f]{16})\): the router logged the details$`)
	for _, fail = range []error{
		errors.New("open /srv/secret-host-path/cache.db: permission denied"),
		skill.Errorf(skill.CodeInternal, "index /srv/secret-host-path corrupt"),
	} {
		msg := h.toolErr(toolFind, map[string]any{"task": "pdf"})
		m := idRE.FindStringSubmatch(msg)
		if m == nil {
			t.Fatalf("internal error answered %q", msg)
		}
		var logged int
		for _, line := range strings.Split(strings.TrimSpace(h.logs.String()), "\n") {
			var rec map[string]any
			_ = json.Unmarshal([]byte(line), &rec)
			if rec["request_id"] == m[1] {
				logged++
				if rec["level"] != "ERROR" || !strings.Contains(fmt.Sprint(rec["err"]), "secret-host-path") {
					t.Errorf("log record %v", rec)
				}
			}
		}
		if logged != 1 {
			t.Errorf("request %s logged %d times, want once", m[1], logged)
		}
		recs := h.audit.find("tools/call", toolFind)
		if last := recs[len(recs)-1]; last.RequestID != m[1] || last.Outcome != "internal" {
			t.Errorf("audit record %+v, want request %s with outcome internal", last, m[1])
		}
	}

	// Unknown tools are protocol errors, not results.
	if _, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: "run_anything", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool answered")
	}
}

func TestAuditRecords(t *testing.T) {
	h := newHarness(t)
	var out loadOutput
	h.ok(toolLoad, map[string]any{"name": "pdf-form-filling"}, &out)
	h.toolErr(toolLoad, map[string]any{"name": "nope"})
	recs := h.audit.find("tools/call", toolLoad)
	if len(recs) != 2 {
		t.Fatalf("records = %+v", recs)
	}
	if r := recs[0]; r.Decision != skill.DecisionAllow || r.Outcome != "ok" || r.Skill != "pdf-form-filling" || r.Principal != "anonymous" || r.RequestID == "" || r.Duration <= 0 {
		t.Errorf("record %+v", r)
	}
	if r := recs[1]; r.Outcome != "not_found" || r.RequestID == recs[0].RequestID {
		t.Errorf("record %+v", r)
	}
	// The Go client opens with server/discover (protocol 2026-07-28) or
	// initialize (earlier protocols).
	if len(h.audit.find("server/discover", ""))+len(h.audit.find("initialize", "")) == 0 {
		t.Errorf("requests other than tool calls are not audited: %+v", h.audit.records())
	}
	for _, r := range h.audit.records() {
		if strings.HasPrefix(r.Method, "notifications/") {
			t.Errorf("notification audited: %+v", r)
		}
	}
}

func TestDisconnectMidCall(t *testing.T) {
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
	h := newHarnessOver(t, cat, fake)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := h.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: toolFind, Arguments: map[string]any{"task": "block"}})
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled call returned a result")
	}
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("router call ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the router call was not cancelled when the client gave up")
	}
	var out findOutput
	h.ok(toolFind, map[string]any{"task": "pdf forms"}, &out) // the session still serves
}

// rawSession speaks newline-delimited JSON-RPC to a view's server over
// pipes, so tests can send what no SDK client would.
type rawSession struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
}

func newRawSession(t *testing.T) *rawSession {
	t.Helper()
	cat := newCatalog()
	f := New(cat.router(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := f.Server(ctx, View{Features: AllFeatures})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		_ = srv.Run(ctx, &mcpsdk.IOTransport{Reader: inR, Writer: outW})
		outW.Close()
		close(done)
	}()
	t.Cleanup(func() { cancel(); inW.Close(); <-done })
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	r := &rawSession{t: t, in: inW, out: sc}
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.recv()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return r
}

func (r *rawSession) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("send: %v", err)
	}
}

// recv reads the next message; ok is false when the server closed.
func (r *rawSession) recv() (msg map[string]any) {
	r.t.Helper()
	got := make(chan bool, 1)
	go func() { got <- r.out.Scan() }()
	select {
	case ok := <-got:
		if !ok {
			return nil
		}
	case <-time.After(5 * time.Second):
		r.t.Fatal("no answer")
	}
	if err := json.Unmarshal(r.out.Bytes(), &msg); err != nil {
		r.t.Fatalf("server wrote a line that is not JSON: %q", r.out.Text())
	}
	return msg
}

func TestMalformedJSONRPC(t *testing.T) {
	r := newRawSession(t)
	for _, tc := range []struct {
		name, line string
		code       float64 // JSON-RPC error code; 0 for an isError tool result, 1 for a tool result
		has        string
	}{
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"find_skills"}`, -32602, ""},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"skills/steal","params":{}}`, -32601, ""},
		{"arguments not an object", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"find_skills","arguments":[1,2]}}`, 0, "validating"},
		{"invalid UTF-8 in the task", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"find_skills\",\"arguments\":{\"task\":\"pdf \xff\xfe forms\"}}}", 1, "candidates"},
		{"NUL in a path", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_skill_file","arguments":{"name":"pdf-form-filling","path":"a\u0000b"}}}`, 0, "permission_denied"},
		{"duplicate key with NUL suffix", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"find_skills","name\u0000":"load_skill","arguments":{"task":"pdf forms"}}}`, 1, "candidates"},
		{"case-folded key", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"NAME":"load_skill","name":"find_skills","arguments":{"task":"pdf forms"}}}`, 1, "candidates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.send(tc.line)
			msg := r.recv()
			if msg == nil {
				t.Fatal("the server closed the session")
			}
			errObj, isErr := msg["error"].(map[string]any)
			switch {
			case tc.code < 0:
				if !isErr || errObj["code"] != tc.code {
					t.Errorf("answer %v, want error code %v", msg, tc.code)
				}
			case tc.code == 0:
				res, _ := msg["result"].(map[string]any)
				if res == nil || res["isError"] != true || !strings.Contains(fmt.Sprint(res["content"]), tc.has) {
					t.Errorf("answer %v, want an isError result with %q", msg, tc.has)
				}
			default:
				// The tool named by the exact key ran (find_skills), not a
				// key smuggled in by case folding or a NUL suffix; invalid
				// UTF-8 reached the router as U+FFFD, which JSON decoding
				// substitutes.
				res, _ := msg["result"].(map[string]any)
				if res == nil || res["isError"] == true || !strings.Contains(fmt.Sprint(res["structuredContent"]), tc.has) {
					t.Errorf("answer %v, want a find_skills result", msg)
				}
			}
		})
	}
	// Still serving after all of it.
	r.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	if msg := r.recv(); msg == nil || msg["error"] != nil {
		t.Errorf("ping after bad input: %v", msg)
	}
	// Bytes that are not JSON at all end a stdio session (the stream cannot
	// be resynchronised); the server closes instead of crashing.
	r.send(`{"jsonrpc":"2.0","id":100,"method":`)
	r.send(`not json`)
	for i := 0; i < 3; i++ {
		msg := r.recv()
		if msg == nil {
			return
		}
		t.Logf("after garbage: %v", msg)
	}
}

// TestResourceReadCodes: a file the router refuses to serve (a link out of
// the folder, a hidden or hard-linked file) is invalid params, as the spec
// answers a file a server does not serve; -32010 is kept for a caller the
// router refuses; a missing file's message points at load_skill.
func TestResourceReadCodes(t *testing.T) {
	cat := newCatalog()
	fake := cat.router()
	load := fake.LoadFunc
	fake.LoadFunc = func(ctx context.Context, req skill.LoadRequest) (*skill.LoadResult, error) {
		switch req.ResourcePath {
		case ".env":
			return nil, skill.Errorf(skill.CodePermissionDenied, "resource_path %q names a hidden file or folder; those are not served", ".env").WithReason("HIDDEN_FILE")
		case "link":
			return nil, skill.Errorf(skill.CodePermissionDenied, "%q leads outside the skill folder", "link").WithReason("PATH_ESCAPE")
		case "token":
			return nil, skill.Errorf(skill.CodePermissionDenied, "token t may not call Load")
		case "gone.md":
			return nil, skill.Errorf(skill.CodeNotFound, "no file %q in this skill; the skill's details list its files", "gone.md").WithReason("NO_SUCH_FILE")
		}
		return load(ctx, req)
	}
	h := newHarnessOver(t, cat, fake)
	for path, want := range map[string]struct {
		code int64
		has  string
	}{
		".env":    {-32602, "hidden file"},
		"link":    {-32602, "outside the skill folder"},
		"token":   {codeForbidden, "may not call"},
		"gone.md": {mcpsdk.CodeResourceNotFound, "(load_skill lists the skill's files)"},
	} {
		_, err := h.cs.ReadResource(context.Background(), &mcpsdk.ReadResourceParams{URI: "skill://pdf-form-filling/" + path})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != want.code || !strings.Contains(je.Message, want.has) {
			t.Errorf("%s: %v, want code %d saying %q", path, err, want.code, want.has)
		}
	}
}
