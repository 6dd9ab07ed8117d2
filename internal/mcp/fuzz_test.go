package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzToolArguments sends arbitrary JSON arguments to every tool (through
// the SDK's decoding and validation, then the handler) and checks that each
// call gets an answer and the server keeps serving.
func FuzzToolArguments(f *testing.F) {
	var servers atomic.Bool
	servers.Store(true)
	h, _ := newToolsHarness(f, &servers)
	h.cat.publish(func(c *catalog) { c.flags.SkillsExec, c.flags.ToolsCall = true, true })
	h.waitChanged("tools")
	tools := []string{toolFind, toolList, toolLoad, toolRead, toolExec, toolFindTools, toolCall}
	for i, seed := range []string{
		`{"task":"fill a PDF form"}`, `{"task":"x","top_k":3,"agent":"reviewer"}`, `{"task":5}`, `{}`, `null`, `[]`,
		`{"name":"pdf-form-filling","token_budget":10}`, `{"name":"pdf-form-filling","path":"../../etc/passwd"}`,
		`{"name":"pdf-form-filling","path":"assets/logo.png"}`, `{"budget_chars":100,"page_token":"2"}`,
		`{"skill":"pdf-form-filling","script":"scripts/fill.py"}`, `{"task":"\u0000\ufffd","top_k":-1e308}`,
		`{"name":"a","path":"b","agent":"` + strings.Repeat("x", 300) + `"}`,
		`{"name":"gh.create_issue","arguments":{"title":"t"}}`, `{"name":"fs.read_file","arguments":[1]}`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, pick uint8, args []byte) {
		if !json.Valid(args) {
			t.Skip("the client cannot send invalid JSON as arguments")
		}
		name := tools[int(pick)%len(tools)]
		res, err := h.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
		if err == nil && res == nil {
			t.Fatal("no result and no error")
		}
		if err == nil && !res.IsError && res.StructuredContent == nil && name != toolCall {
			t.Fatalf("%s(%s): success without structured content", name, args)
		}
		if err := h.cs.Ping(ctx, nil); err != nil {
			t.Fatalf("server stopped answering after %s(%s): %v", name, args, err)
		}
	})
}

// FuzzParseSkillURI checks that the URI check never panics, that what it
// accepts is a clean relative path inside a skill folder, and that the URIs
// this server makes read back to the same name and path.
func FuzzParseSkillURI(f *testing.F) {
	for _, s := range []string{"skill://a/SKILL.md", "skill://a/../b", "skill://a/%2e%2e/x", "skill://data%20tools/a%20b.md",
		"SKILL://x/y", "skill://a/b%00", "skill:///x", "skill://a/b/", "skill://a/C:%5Cx", "skill://%ff/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		name, file, err := parseSkillURI(uri)
		if err != nil {
			return
		}
		if name == "" || file == "" || strings.HasPrefix(file, "/") || strings.ContainsAny(file+name, "\\\x00") ||
			path.Clean(file) != file || file == ".." || strings.HasPrefix(file, "../") || strings.Contains(name, "/") {
			t.Fatalf("%q accepted as name %q, path %q", uri, name, file)
		}
		n2, f2, err := parseSkillURI(skillURI(name, file))
		if err != nil || n2 != name || f2 != file {
			t.Fatalf("%q -> (%q, %q) -> %q -> (%q, %q, %v)", uri, name, file, skillURI(name, file), n2, f2, err)
		}
	})
}

// FuzzPeekCall: whatever a POST body holds, peekCall leaves it to be read
// again whole, and says it is a call only with a method and an id.
func FuzzPeekCall(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"x"}`, `{"id":{},"method":"x"}`, `[1]`, `{`, "", `{"id":null,"method":"m"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", bytes.NewReader(body))
		call, ok := peekCall(r, 64)
		rest, _ := io.ReadAll(r.Body)
		if !bytes.Equal(rest, body) {
			t.Fatalf("the body reads %q after peeking, want %q", rest, body)
		}
		if ok != (len(body) <= 64) {
			t.Fatalf("ok %v for %d bytes", ok, len(body))
		}
		if call.isCall && (call.method == "" || !call.id.IsValid()) {
			t.Fatalf("a call without method or id: %+v", call)
		}
	})
}
