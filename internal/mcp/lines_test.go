package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// stdioSession runs Serve over pipes and returns a function that writes a
// line and, when a reply is expected, returns it.
func stdioSession(t testing.TB) (send func(line string, reply bool) map[string]any) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, newCatalog().router(), inR, outW, Options{}) }()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return")
		}
		outR.Close()
	})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return func(line string, reply bool) map[string]any {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatalf("write %.60q: %v (the session ended)", line, err)
		}
		if !reply {
			return nil
		}
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("after %.60q: the session ended", line)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("after %.60q: reply %q is not JSON", line, l)
			}
			return m
		case <-time.After(5 * time.Second):
			t.Fatalf("no reply to %.60q", line)
			return nil
		}
	}
}

// TestStdioAnswersBadLines: a line the server cannot take gets a JSON-RPC
// error with the right code, and the session goes on.
func TestStdioAnswersBadLines(t *testing.T) {
	send := stdioSession(t)
	code := func(m map[string]any) (float64, any) {
		e, _ := m["error"].(map[string]any)
		c, _ := e["code"].(float64)
		return c, m["id"]
	}
	// Before initialize, a request is refused but ping is answered.
	if c, id := code(send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true)); c != -32600 || id != 1.0 {
		t.Errorf("tools/list before initialize: code %v id %v", c, id)
	}
	if m := send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`, true); m["result"] == nil {
		t.Errorf("ping before initialize: %v", m)
	}
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{"hello", -32700, nil},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"`, -32700, nil},
		{`{}`, -32600, nil},
		{`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`, -32600, nil},
		{`[]`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, 5.0},
		{`42`, -32600, nil},
	} {
		if c, id := code(send(tc.line, true)); c != tc.code || id != tc.id {
			t.Errorf("%q: code %v id %v, want %v %v", tc.line, c, id, tc.code, tc.id)
		}
	}
	send("", false)
	send("   ", false)
	init := send(`{"jsonrpc":"2.0","id":10,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, true)
	if init["result"] == nil {
		t.Fatalf("initialize after the bad lines: %v", init)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false)
	if c, _ := code(send(`{"jsonrpc":"2.0","id":11,"method":"no/such"}`, true)); c != -32601 {
		t.Errorf("unknown method: code %v", c)
	}
	tools := send(`{"jsonrpc":"2.0","id":12,"method":"tools/list"}`, true)
	if res, _ := tools["result"].(map[string]any); res == nil || len(res["tools"].([]any)) == 0 {
		t.Errorf("tools/list after the bad lines: %v", tools)
	}
}

func TestReadLine(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\nlast"), 16)
	for _, want := range []struct {
		line    string
		tooLong bool
		eof     bool
	}{{"short", false, false}, {"", true, false}, {"last", false, true}} {
		line, tooLong, err := readLine(r, 50)
		if string(line) != want.line || tooLong != want.tooLong || (err == io.EOF) != want.eof {
			t.Errorf("readLine = %q %v %v, want %+v", line, tooLong, err, want)
		}
	}
}

// FuzzStdioLines feeds a line to a session: whatever it is, the session
// answers with JSON (or not at all) and still answers ping.
func FuzzStdioLines(f *testing.F) {
	for _, s := range []string{"hello", "{}", "[1]", `{"jsonrpc":"2.0","id":{},"method":"x"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_skills"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{}}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.ContainsAny(line, "\n\r") {
			return
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { _ = Serve(ctx, newCatalog().router(), inR, outW, Options{}); close(done) }()
		go func() {
			io.WriteString(inW, line+"\n")
			io.WriteString(inW, `{"jsonrpc":"2.0","id":"probe","method":"ping"}`+"\n")
		}()
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<24)
		deadline := time.AfterFunc(5*time.Second, func() { outR.Close() })
		defer deadline.Stop()
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("reply %q is not JSON", sc.Text())
			}
			if m["id"] == "probe" {
				if m["result"] == nil {
					t.Fatalf("ping after %q: %v", line, m)
				}
				inW.Close()
				cancel()
				<-done
				return
			}
		}
		t.Fatalf("no answer to ping after %q", line)
	})
}
