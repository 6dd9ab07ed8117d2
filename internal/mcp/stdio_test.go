package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpsag/router/internal/testlog"
)

// helperEnv makes the test binary an MCP server on stdio over the catalog
// fake, for the subprocess tests here and the TypeScript client test.
const helperEnv = "MCPSAG_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "stdio" {
		os.Exit(serveHelper())
	}
	os.Exit(m.Run())
}

// serveHelper serves the catalog fake on stdio; logs go to stderr. When
// asked, it publishes a new generation every 500ms, each adding a skill
// csv-cleanup-N, so clients see list_changed whenever they connect.
func serveHelper() int {
	cat := newCatalog()
	if os.Getenv(helperEnv+"_RELOAD") != "" {
		go func() {
			for n := 1; ; n++ {
				time.Sleep(500 * time.Millisecond)
				name := fmt.Sprintf("csv-cleanup-%d", n)
				cat.publish(func(c *catalog) {
					c.skills = append(c.skills, newSkill(name, "Clean CSV files"))
					c.bodies[key(name, "")] = "Trim cells.\n"
				})
			}
		}()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := Serve(context.Background(), cat.router(), os.Stdin, os.Stdout, Options{Logger: log}); err != nil {
		log.Error("serve", "err", err)
		return 1
	}
	return 0
}

// recorder keeps a copy of everything written through it.
type recorder struct {
	mu sync.Mutex
	b  bytes.Buffer
	w  io.Writer
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.b.Write(p)
	r.mu.Unlock()
	return r.w.Write(p)
}

func TestServeStdio(t *testing.T) {
	cat := newCatalog()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	out := &recorder{w: outW}
	logs := &testlog.Buffer{}
	served := make(chan error, 1)
	go func() {
		err := Serve(context.Background(), cat.router(), inR, out, Options{Agent: "reviewer", Logger: slog.New(slog.NewTextHandler(logs, nil))})
		outW.Close()
		served <- err
	}()
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcpsdk.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolFind, Arguments: map[string]any{"task": "review pull requests"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "reviewer-checklist") {
		t.Fatalf("find_skills over stdio for agent reviewer: %v %v", err, res)
	}
	if res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolLoad, Arguments: map[string]any{"name": "no-such"}}); err != nil || !res.IsError {
		t.Fatalf("an error result over stdio: %v %v", err, res)
	}
	if _, err := cs.ListPrompts(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after the client closed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the client closed stdin")
	}
	out.mu.Lock()
	written := out.b.String()
	out.mu.Unlock()
	lines := strings.Split(strings.TrimRight(written, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("only %d lines on stdout", len(lines))
	}
	for _, line := range lines {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Errorf("stdout holds a line that is not an MCP message: %q", line)
		}
	}
}

func TestStdioSubprocess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=stdio", helperEnv+"_RELOAD=1")
	var stderr testlog.Buffer
	cmd.Stderr = &stderr
	changed := make(chan struct{}, 4)
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "subprocess-test", Version: "1"}, &mcpsdk.ClientOptions{
		PromptListChangedHandler: func(context.Context, *mcpsdk.PromptListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := c.Connect(context.Background(), &mcpsdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolFind, Arguments: map[string]any{"task": "fill a PDF form"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "pdf-form-filling") {
		t.Fatalf("find_skills in a subprocess: %v %v (stderr %s)", err, res, stderr.String())
	}
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no prompts/list_changed from the subprocess after its reload")
	}
	got, err := cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "csv-cleanup-1"})
	if err != nil || !strings.Contains(got.Messages[0].Content.(*mcpsdk.TextContent).Text, "Trim cells.") {
		t.Errorf("the reloaded skill's prompt: %v %v", got, err)
	}
}

func TestSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, func(o *Options, _ *View) { o.TracerProvider = tp })
	parent := trace.SpanContextConfig{TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled}
	tp0 := "00-" + parent.TraceID.String() + "-" + parent.SpanID.String() + "-01"
	_, err := h.cs.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: toolFind, Arguments: map[string]any{"task": "pdf forms"},
		Meta: mcpsdk.Meta{"traceparent": tp0}})
	if err != nil {
		t.Fatal(err)
	}
	h.toolErr(toolLoad, map[string]any{"name": "nope"})
	if _, err := h.cs.GetPrompt(context.Background(), &mcpsdk.GetPromptParams{Name: "pdf-form-filling"}); err != nil {
		t.Fatal(err)
	}
	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		spans[s.Name()] = s
	}
	attr := func(s sdktrace.ReadOnlySpan, k string) string {
		for _, a := range s.Attributes() {
			if string(a.Key) == k {
				return a.Value.Emit()
			}
		}
		return ""
	}
	find, ok := spans["tools/call find_skills"]
	if !ok {
		t.Fatalf("no find_skills span in %v", keys(spans))
	}
	if find.SpanKind() != trace.SpanKindServer || attr(find, "mcp.method.name") != "tools/call" || attr(find, "gen_ai.tool.name") != toolFind ||
		attr(find, "network.transport") != "pipe" || attr(find, "mcpsag.outcome") != "ok" {
		t.Errorf("find_skills span: kind %v attrs %v", find.SpanKind(), find.Attributes())
	}
	if find.Parent().TraceID() != parent.TraceID || find.Parent().SpanID() != parent.SpanID {
		t.Errorf("the client's traceparent was not continued: parent %v", find.Parent())
	}
	load := spans["tools/call load_skill"]
	if load == nil || load.Status().Code != codes.Error || attr(load, "error.type") != "not_found" {
		t.Errorf("failed load_skill span: %v", load)
	}
	if p := spans["prompts/get pdf-form-filling"]; p == nil || attr(p, "gen_ai.prompt.name") != "pdf-form-filling" {
		t.Errorf("prompt span missing: %v", keys(spans))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
