package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawTransport wraps a stdio transport so that the bytes of every
// tools/list page are kept as the server sent them: the SDK decodes each
// tool's schema into a map, and the router serves schemas verbatim. Over
// HTTP, rawHTTP does the same without wrapping the connection.
type rawTransport struct {
	inner mcpsdk.Transport
	pages *rawPages
}

// rawPages holds the raw tools of the last tools/list answer.
type rawPages struct {
	mu      sync.Mutex
	pending map[string]bool // request ids of tools/list calls in flight
	last    []json.RawMessage
	cursor  string
	ok      bool
}

// take returns the raw tools and next cursor of the last tools/list answer
// and forgets them; ok is false when there was none, or it was not a JSON
// object with a tools array.
func (p *rawPages) take() (tools []json.RawMessage, cursor string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tools, cursor, ok = p.last, p.cursor, p.ok
	p.last, p.cursor, p.ok = nil, "", false
	return tools, cursor, ok
}

func (t *rawTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &rawConn{Connection: c, pages: t.pages}, nil
}

type rawConn struct {
	mcpsdk.Connection
	pages *rawPages
}

func idKey(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

func (c *rawConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.pages.expect(m)
	return c.Connection.Write(ctx, m)
}

func (c *rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.pages.offer(m)
	}
	return m, err
}

// expect notes m when it is a tools/list call, whose answer's raw tools
// offer keeps; it reports whether it was one.
func (p *rawPages) expect(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	if !ok || req.Method != "tools/list" || !req.ID.IsValid() {
		return false
	}
	p.mu.Lock()
	if p.pending == nil {
		p.pending = map[string]bool{}
	}
	p.pending[idKey(req.ID)] = true
	p.mu.Unlock()
	return true
}

// offer keeps the raw tools and next cursor of m when it answers a
// tools/list call that expect noted.
func (p *rawPages) offer(m jsonrpc.Message) {
	resp, ok := m.(*jsonrpc.Response)
	if !ok {
		return
	}
	key := idKey(resp.ID)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.pending[key] {
		return
	}
	delete(p.pending, key)
	var page struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor json.RawMessage   `json:"nextCursor"`
	}
	p.last, p.cursor, p.ok = nil, "", false
	if resp.Error == nil && json.Unmarshal(resp.Result, &page) == nil && page.Tools != nil {
		var cursor string
		_ = json.Unmarshal(page.NextCursor, &cursor)
		p.last, p.cursor, p.ok = page.Tools, cursor, true
	}
}
