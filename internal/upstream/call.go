package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpsag/router/internal/skill"
)

// Call calls a tool on its server and returns the result bounded to the
// server's max_result_bytes, text unframed. The server's own failure
// (isError, or a JSON-RPC error such as invalid arguments) is a result with
// IsError set.
// Errors: CodeNotFound (no such server), CodeUnavailable
// (SERVER_UNAVAILABLE: not connected or the connection failed;
// UPSTREAM_TIMEOUT: no answer within call_timeout), CodeResourceExhausted
// (SERVER_RATE_LIMITED), and ctx's error.
func (m *Manager) Call(ctx context.Context, t *skill.Tool, args json.RawMessage) (*skill.ToolResult, error) {
	c, ok := m.client(t.Server)
	if !ok {
		return nil, skill.Errorf(skill.CodeNotFound, "MCP server %s is not configured or not enabled", t.Server).
			WithReason(skill.ReasonToolNotFound)
	}
	sess := c.live()
	if sess == nil {
		return nil, c.errUnavailable()
	}
	if c.limiter != nil && !c.limiter.Allow() {
		return nil, skill.Errorf(skill.CodeResourceExhausted, "calls to MCP server %s exceed its rate of %g per second; retry shortly", t.Server, c.cfg.Rate).
			WithReason(skill.ReasonServerRateLimited)
	}
	if len(strings.TrimSpace(string(args))) == 0 {
		args = json.RawMessage("{}")
	}
	cctx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
	defer cancel()
	start := time.Now()
	res, err := sess.CallTool(cctx, &mcpsdk.CallToolParams{Name: t.Name, Arguments: args})
	took := time.Since(start)
	if err != nil {
		var rpcErr *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case cctx.Err() != nil:
			return nil, skill.Errorf(skill.CodeUnavailable, "MCP server %s did not answer within call_timeout %s", t.Server, c.cfg.CallTimeout).
				WithReason(skill.ReasonUpstreamTimeout)
		case errors.As(err, &rpcErr):
			msg, _ := Clean(rpcErr.Message, 2000)
			res = &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{
				Text: fmt.Sprintf("the server refused the call (JSON-RPC error %d): %s", rpcErr.Code, msg)}}}
		default:
			return nil, skill.Errorf(skill.CodeUnavailable, "calling MCP server %s failed: %s", t.Server, c.redact(err)).
				WithReason(skill.ReasonServerUnavailable)
		}
	}
	out := bound(res, c.cfg.MaxResultBytes)
	out.Server, out.Tool, out.Duration, out.Trusted = t.Server, t.Name, took, t.Trusted
	return out, nil
}

// bound converts a call result, keeping at most limit bytes of content:
// text is cut at a character boundary, binary blocks that do not fit are
// replaced by a note, structured content that does not fit is left out.
func bound(res *mcpsdk.CallToolResult, limit int) *skill.ToolResult {
	b := &bounder{out: &skill.ToolResult{IsError: res.IsError}, left: limit, limit: limit}
	for _, c := range res.Content {
		if b.left <= 0 {
			b.out.Truncated = true
			break
		}
		if tc, ok := b.block(c); ok {
			b.out.Content = append(b.out.Content, tc)
		}
	}
	if res.StructuredContent != nil {
		b.structured(res.StructuredContent)
	}
	b.out.Bytes = limit - max(b.left, 0)
	return b.out
}

// bounder converts the blocks of one call result into out, counting the
// bytes left of the limit.
type bounder struct {
	out   *skill.ToolResult
	left  int
	limit int
}

// block converts one content block; ok is false for a block left out
// without a note.
func (b *bounder) block(c mcpsdk.Content) (tc skill.ToolContent, ok bool) {
	switch c := c.(type) {
	case *mcpsdk.TextContent:
		return skill.ToolContent{Type: "text", Text: b.text(c.Text)}, true
	case *mcpsdk.ImageContent:
		return b.binary("image", c.MIMEType, c.Data), true
	case *mcpsdk.AudioContent:
		return b.binary("audio", c.MIMEType, c.Data), true
	case *mcpsdk.ResourceLink:
		name, _ := Clean(c.Name, 200)
		desc, _ := Clean(c.Description, 500)
		uri := skill.Clip(c.URI, 2000)
		b.left -= len(uri) + len(name) + len(desc)
		return skill.ToolContent{Type: "resource_link", URI: uri, Name: name, Description: desc, MIMEType: c.MIMEType}, true
	case *mcpsdk.EmbeddedResource:
		r := c.Resource
		if r == nil {
			return tc, false
		}
		if r.Blob != nil {
			bin := b.binary("resource", r.MIMEType, r.Blob)
			if bin.Type != "resource" {
				return bin, true // the note in its place
			}
			return skill.ToolContent{Type: "resource", URI: skill.Clip(r.URI, 2000), MIMEType: r.MIMEType, Data: bin.Data}, true
		}
		return skill.ToolContent{Type: "resource", URI: skill.Clip(r.URI, 2000), MIMEType: r.MIMEType, Text: b.text(r.Text)}, true
	default:
		b.out.Truncated = true
		return skill.ToolContent{Type: "text", Text: "[a content block of a type the router does not forward was left out]"}, true
	}
}

// text keeps what fits of s, cut at a character boundary and then saying
// so.
func (b *bounder) text(s string) string {
	if len(s) <= b.left {
		b.left -= len(s)
		return s
	}
	cut := b.left
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	b.left = 0
	b.out.Truncated = true
	return s[:cut] + fmt.Sprintf("\n[cut: the result is over the %d-byte limit]", b.limit)
}

// binary keeps a binary block when its base64 form fits, else a note.
func (b *bounder) binary(kind, mime string, data []byte) skill.ToolContent {
	size := base64.StdEncoding.EncodedLen(len(data))
	if size > b.left {
		b.left = 0
		b.out.Truncated = true
		return skill.ToolContent{Type: "text", Text: fmt.Sprintf("[a %s block (%s, %d bytes) was left out: it is over the result limit]", kind, skill.Clip(mime, 60), len(data))}
	}
	b.left -= size
	return skill.ToolContent{Type: kind, MIMEType: skill.Clip(mime, 100), Data: data}
}

// structured keeps the structured content when its JSON fits.
func (b *bounder) structured(v any) {
	j, err := json.Marshal(v)
	switch {
	case err != nil:
	case len(j) <= b.left:
		b.out.StructuredContent = j
		b.left -= len(j)
	default:
		b.out.Truncated = true
	}
}
