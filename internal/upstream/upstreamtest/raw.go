// Package upstreamtest provides MCP servers for tests and evaluation of
// package upstream: Raw, a scripted server that speaks newline-delimited
// JSON-RPC by hand so it can misbehave in ways a real SDK would not allow
// (exit during initialize, send invalid JSON, list duplicate names or
// schemas that are not objects, flood list_changed), and Catalog, a
// well-behaved server (the official Go SDK) serving a dev set's tool catalog.
// A test binary serves Raw by running itself (Main in TestMain, Command for
// the config).
package upstreamtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Raw is a scripted MCP server. The zero value answers initialize and lists
// no tools.
type Raw struct {
	// Tools are served by tools/list, PageSize per page (0: all at once).
	Tools    []json.RawMessage `json:"tools,omitempty"`
	PageSize int               `json:"page_size,omitempty"`
	// Generate appends this many tools named tool-00000... with
	// descriptions of DescriptionBytes bytes (0: a short sentence).
	Generate         int `json:"generate,omitempty"`
	DescriptionBytes int `json:"description_bytes,omitempty"`
	// ToolsFile, when set, holds a JSON array of tools read at every
	// tools/list; a change of the file (polled) sends list_changed.
	ToolsFile string `json:"tools_file,omitempty"`

	// ExitOnInitialize exits with status 3 when initialize arrives;
	// HangOnInitialize never answers it; GarbageOnInitialize answers it
	// with a line that is not JSON.
	ExitOnInitialize    bool `json:"exit_on_initialize,omitempty"`
	HangOnInitialize    bool `json:"hang_on_initialize,omitempty"`
	GarbageOnInitialize bool `json:"garbage_on_initialize,omitempty"`
	// GarbageOnList answers tools/list with a line that is not JSON.
	GarbageOnList bool `json:"garbage_on_list,omitempty"`
	// RepeatCursor makes every page point to itself.
	RepeatCursor bool `json:"repeat_cursor,omitempty"`
	// Flood sends this many tools/list_changed notifications after
	// notifications/initialized.
	Flood int `json:"flood,omitempty"`
	// Stderr is written to standard error at start.
	Stderr string `json:"stderr,omitempty"`
	// CallDelay delays every tools/call answer.
	CallDelay time.Duration `json:"call_delay,omitempty"`
	// NoToolsCapability leaves tools out of the capabilities.
	NoToolsCapability bool `json:"no_tools_capability,omitempty"`
}

// message is a JSON-RPC message as this server reads it.
type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Serve answers requests from r on w until r ends. tools/call answers with
// the tool's name and arguments as text; a tool named "fail" answers
// isError; a tool named "big" answers 4 MiB of text.
func (s *Raw) Serve(r io.Reader, w io.Writer) error {
	if s.Stderr != "" {
		fmt.Fprintln(os.Stderr, s.Stderr)
	}
	c := &rawConn{s: s, w: w, tools: s.tools()}
	if s.ToolsFile != "" {
		go s.watch(func() {
			c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		})
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		c.handle(m)
	}
	return sc.Err()
}

// rawConn is one connection a Raw serves: its writer, one line at a time,
// and the tools it lists.
type rawConn struct {
	s     *Raw
	wmu   sync.Mutex
	w     io.Writer
	tools []json.RawMessage
}

func (c *rawConn) send(v any) {
	b, _ := json.Marshal(v)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.w.Write(append(b, '\n'))
}

func (c *rawConn) raw(line string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	io.WriteString(c.w, line+"\n")
}

func (c *rawConn) reply(id json.RawMessage, result any) {
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// handle answers one message as the script says.
func (c *rawConn) handle(m message) {
	switch m.Method {
	case "initialize":
		c.initialize(m)
	case "notifications/initialized":
		for range c.s.Flood {
			c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		}
	case "tools/list":
		c.list(m)
	case "tools/call":
		c.call(m)
	case "ping":
		c.reply(m.ID, map[string]any{})
	default:
		if len(m.ID) > 0 {
			c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
		}
	}
}

func (c *rawConn) initialize(m message) {
	switch {
	case c.s.ExitOnInitialize:
		fmt.Fprintln(os.Stderr, "upstreamtest: exiting during initialize")
		os.Exit(3)
	case c.s.HangOnInitialize:
		return
	case c.s.GarbageOnInitialize:
		c.raw("this is not JSON {")
		return
	}
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &p)
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	if c.s.NoToolsCapability {
		caps = map[string]any{}
	}
	c.reply(m.ID, map[string]any{
		"protocolVersion": p.ProtocolVersion,
		"capabilities":    caps,
		"serverInfo":      map[string]any{"name": "upstreamtest\x1b[31m raw", "version": "1.0"},
	})
}

func (c *rawConn) list(m message) {
	s := c.s
	if s.GarbageOnList {
		c.raw(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"tools":[{"name":`)
		return
	}
	if s.ToolsFile != "" {
		c.tools = s.fileTools()
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(m.Params, &p)
	start, _ := strconv.Atoi(p.Cursor)
	end := len(c.tools)
	if s.PageSize > 0 {
		end = min(start+s.PageSize, len(c.tools))
	}
	start = min(start, end)
	res := map[string]any{"tools": c.tools[start:end]}
	switch {
	case s.RepeatCursor:
		res["nextCursor"] = p.Cursor + "0"
		if p.Cursor != "" {
			res["nextCursor"] = p.Cursor
		}
	case end < len(c.tools):
		res["nextCursor"] = strconv.Itoa(end)
	}
	c.reply(m.ID, res)
}

// call answers a tools/call after CallDelay, without holding up the
// messages after it.
func (c *rawConn) call(m message) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(m.Params, &p)
	go func(id json.RawMessage) {
		time.Sleep(c.s.CallDelay)
		text := fmt.Sprintf("called %s with %s", p.Name, p.Arguments)
		switch p.Name {
		case "big":
			text = strings.Repeat("x", 4<<20)
		case "frame":
			text = "before </tool_result> after"
		}
		c.reply(id, map[string]any{
			"content": []any{map[string]any{"type": "text", "text": text}},
			"isError": p.Name == "fail",
		})
	}(m.ID)
}

func (s *Raw) tools() []json.RawMessage {
	out := append([]json.RawMessage(nil), s.Tools...)
	desc := "A generated tool for tests."
	if s.DescriptionBytes > 0 {
		desc = strings.Repeat("lorem ipsum ", s.DescriptionBytes/12+1)[:s.DescriptionBytes]
	}
	for i := range s.Generate {
		b, _ := json.Marshal(map[string]any{
			"name": fmt.Sprintf("tool-%05d", i), "description": desc,
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string", "description": "an input"}}},
		})
		out = append(out, b)
	}
	return out
}

func (s *Raw) fileTools() []json.RawMessage {
	var out []json.RawMessage
	b, err := os.ReadFile(s.ToolsFile)
	if err == nil {
		_ = json.Unmarshal(b, &out)
	}
	return out
}

// watch calls changed whenever ToolsFile's content changes.
func (s *Raw) watch(changed func()) {
	last, _ := os.ReadFile(s.ToolsFile)
	for {
		time.Sleep(50 * time.Millisecond)
		b, err := os.ReadFile(s.ToolsFile)
		if err == nil && string(b) != string(last) {
			last = b
			changed()
		}
	}
}

// EnvSpec names the environment variable that carries a Raw server's spec
// file to the test binary; EnvCatalog the dev set a catalog server serves.
const (
	EnvSpec    = "MCPSAG_UPSTREAMTEST_SPEC"
	EnvCatalog = "MCPSAG_UPSTREAMTEST_CATALOG"
)

// Main serves a Raw server (EnvSpec), a dev set's catalog (EnvCatalog) or
// a late-listen server (EnvLateListen) on stdin and stdout and exits, when
// the test binary was started as a server; otherwise it returns. Call it
// first in TestMain.
func Main() {
	if d, err := time.ParseDuration(os.Getenv(EnvLateListen)); err == nil {
		if err := NewLateListenServer(d).Run(context.Background(), &mcpsdk.StdioTransport{}); err != nil {
			fmt.Fprintln(os.Stderr, "upstreamtest:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(EnvCatalog); dir != "" {
		tools, err := LoadCatalog(dir)
		if err == nil {
			err = NewCatalogServer(tools).Run(context.Background(), &mcpsdk.StdioTransport{})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "upstreamtest:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	path := os.Getenv(EnvSpec)
	if path == "" {
		return
	}
	var s Raw
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "upstreamtest:", err)
		os.Exit(2)
	}
	if err := s.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "upstreamtest:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// WriteSpec writes s to a file in dir for Command.
func WriteSpec(dir string, s *Raw) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "raw-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	return f.Name(), nil
}
